"""Reads for the validation task: which pairs a validator may be offered, and their own batches."""

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import IntegerField, Sum
from django.db.models.expressions import RawSQL

from corpus.models import LABELS_PER_PAIR, Dataset, ItemKind, PremiseStatus, Worker
from crowd.claiming import LIVE_SQL, claim_key, live_claims_sql, live_params, lock_clause, marks
from crowd.models import Study
from crowd.selectors import SHARED_DEVICE_SQL
from quality.catch_trials import catch_shortfall

from .models import SessionServed, ValidationClaim

# Pairs come in batches of five (MultiNLI §2.1).
BATCH_SIZE = 5


# The validation claims that hold a place on the pair `collection_pair`, catch trials left out (they
# hold none). Params: `live_params(now)`. As `open_claims_subquery`, in the ORM's readers.
LIVE_CLAIMS_SQL = live_claims_sql(
    "validation_validationclaim", "pair_id", "collection_pair.id", also=" AND NOT c.is_catch_trial"
)


def open_claims_subquery(now: datetime) -> RawSQL:
    """`LIVE_CLAIMS_SQL` for a queryset or an update of pairs: the claim statements and the ORM's
    readers count a pair's live claims with the one expression."""
    return RawSQL(LIVE_CLAIMS_SQL, live_params(now), output_field=IntegerField())


def candidate_statement(
    worker: Worker,
    now: datetime,
    *,
    dataset: Dataset | None = None,
    item_kind: str = ItemKind.SINGLE_PREMISE,
    fresh_premises: bool = False,
    pool: tuple[list[int], list[str]] = ([], []),
    tried: Sequence[int] = (),
    limit: int | None = None,
    lock: bool = False,
    prefer: tuple[str, list[Any]] | None = None,
) -> tuple[str, list[Any]]:
    """The pairs this worker may be offered, closest to complete first: (pk, premise pk, label count)
    of each, up to `limit`, leaving out those `tried`; `pool`, a study's genres and import files;
    with `lock`, locked as a claim locks its candidates. Written in SQL: built by the ORM it cost a
    claim more CPU than the database spent on all the claim's statements. Items of one kind only.

    Steps of the policy, top to bottom: the pair needs validation; its labels plus the places held
    by live claims are under the target; the worker (or an id seen on one of their devices, or
    linked to them by the market) did not write it, the worker did not label it or hold a claim on
    it before; its premise is not held for a researcher; a trusted-only dataset is offered to
    trusted workers only. With `fresh_premises`, only pairs of premises the worker was never served
    (a premise seen again in a later batch told ordinary pairs from catch trials).

    With `prefer` (`validation.claim_order`), the pairs it holds true for come first, then the rest
    (one statement of two parts, the second read only when the first falls short).
    """
    # The claim indexes' own condition first, so the walk reads `pair_claim_queue_free(_all)`: pairs
    # that labels and live claims fill (as last counted) are not in them, so a claim does not walk
    # past them however many claims are live. The live claims are counted below anyway.
    where = ["collection_pair.label_count < (%s - collection_pair.held_places)", "collection_pair.needs_validation"]
    params: list[Any] = [LABELS_PER_PAIR]
    if dataset is not None:
        where.append("collection_pair.dataset_id = %s")
        params.append(dataset.pk)
    else:  # no team that excluded the worker offers them its pairs (a study's team refuses them first)
        where.append(
            "NOT (collection_pair.dataset_id IN (SELECT k.id FROM collection_dataset k INNER JOIN "
            "corpus_workerexclusion x ON x.team_id = k.team_id WHERE x.worker_id = %s))"
        )
        params.append(worker.pk)
    kind = "collection_pair.dataset_id IN (SELECT k.id FROM collection_dataset k WHERE k.item_kind = %s)"
    where.append(kind if item_kind == ItemKind.MULTI_PREMISE else f"NOT ({kind})")
    params.append(ItemKind.MULTI_PREMISE)
    author = "collection_pair.author_id"
    where += [
        f"NOT ({author} = %s AND {author} IS NOT NULL)",
        f"NOT ({author} IN ({SHARED_DEVICE_SQL}) AND {author} IS NOT NULL)",
        # Ids the server knows are the worker's (crowd.WorkerLink: the same market session, the
        # market's record): one indexed lookup of the worker's links (one_link_per_worker_pair).
        f"NOT ({author} IN (SELECT k.linked_id FROM crowd_workerlink k WHERE k.worker_id = %s) AND {author} IS NOT NULL)",
        "NOT (collection_pair.id IN (SELECT l.pair_id FROM validation_validationlabel l WHERE l.worker_id = %s))",
        "NOT (collection_pair.premise_id IN (SELECT v.premise_id FROM validation_validationclaim u"
        " INNER JOIN collection_pair v ON v.id = u.pair_id WHERE u.worker_id = %s))"
        if fresh_premises
        else "NOT (collection_pair.id IN (SELECT u.pair_id FROM validation_validationclaim u WHERE u.worker_id = %s))",
        "NOT (collection_premise.status = %s)",
    ]
    params += [worker.pk, worker.pk, worker.pk, worker.pk, worker.pk, PremiseStatus.HELD]
    joins = " INNER JOIN collection_premise ON collection_premise.id = collection_pair.premise_id"
    if not worker.is_trusted:
        joins += " LEFT OUTER JOIN validation_validationpolicy t ON t.dataset_id = collection_pair.dataset_id"
        where.append("NOT (t.trusted_only AND t.trusted_only IS NOT NULL)")
    where.append(f"collection_pair.label_count < (%s - {LIVE_CLAIMS_SQL})")
    params += [LABELS_PER_PAIR, *live_params(now)]
    genres, sources = pool
    if genres:
        where.append(f"collection_premise.genre_id IN ({marks(genres)})")
        params += genres
    if sources:
        where.append(f"collection_premise.source IN ({marks(sources)})")
        params += sources
    if tried:
        where.append(f"NOT (collection_pair.id IN ({marks(tried)}))")
        params += tried
    select = "SELECT collection_pair.id, collection_pair.premise_id, collection_pair.label_count FROM collection_pair"
    tail, tail_params = "", []
    if limit is not None:
        tail += " LIMIT %s"
        tail_params.append(limit)
    if lock:
        tail += lock_clause("collection_pair")
    order = " ORDER BY collection_pair.label_count DESC, collection_pair.id"
    if prefer is None:
        return f"{select}{joins} WHERE {' AND '.join(where)}{order}{tail}", params + tail_params
    # The preferred pairs first, then the others, each walking the claim index in its order: two
    # parts of one statement, the second read only when the first has fewer than `limit` (an
    # ORDER BY over the preference would sort the whole queue and lock nothing until it had).
    expression, prefer_params = prefer
    parts = [
        f"{select}{joins} WHERE {' AND '.join(where)} AND ({expression}){order}{tail}",
        f"{select}{joins} WHERE {' AND '.join(where)} AND NOT ({expression}){order}{tail}",
    ]
    sql = (
        f"WITH preferred AS ({parts[0]}), others AS ({parts[1]}) SELECT * FROM preferred UNION ALL SELECT * FROM others"
    )
    part_params = params + prefer_params + tail_params
    if limit is not None:
        sql += " LIMIT %s"
    return sql, part_params + part_params + ([limit] if limit is not None else [])


def claimable_pairs(worker: Worker, now: datetime, **options: Any) -> list[int]:
    """The pks of the pairs this worker may be offered, in candidate order (`candidate_statement`,
    unlocked; its options)."""
    sql, params = candidate_statement(worker, now, **options)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [pk for pk, *_ in cursor.fetchall()]


def worker_open_batch(worker: Worker, now: datetime, *, item_kind: str = ItemKind.SINGLE_PREMISE) -> uuid.UUID | None:
    """The batch id of the worker's live claims of this item kind, catch trials included, if they have
    one (a reload gets it back). One statement of every claim, written in SQL (`LIVE_CLAIMS_SQL`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.batch FROM validation_validationclaim c"
            " INNER JOIN collection_pair p ON p.id = c.pair_id INNER JOIN collection_dataset d ON d.id = p.dataset_id"
            f" WHERE {LIVE_SQL} AND c.worker_id = %s AND d.item_kind = %s"
            " ORDER BY c.created_at, c.id LIMIT 1",
            [*live_params(now), worker.pk, item_kind],
        )
        row = cursor.fetchone()
    return claim_key(row[0]) if row else None


def batch_claims(worker: Worker, batch: uuid.UUID | str) -> list[ValidationClaim]:
    """A worker's claims in one batch, with the pairs to show. Another worker's batch is empty."""
    batch_id = claim_key(batch)
    if batch_id is None:
        return []
    return list(
        ValidationClaim.objects.filter(worker=worker, batch=batch_id)
        .select_related("pair", "pair__dataset", "pair__premise", "pair__premise__genre", "study_session__study")
        .order_by("id")
    )


def study_catch_shortfall(study: Study) -> str | None:
    """Why the study's catch-trial share cannot be met by its pool, in words, or None."""
    return catch_shortfall(study, ValidationClaim.objects.all(), batch_size=BATCH_SIZE)


def study_served(study_id: int) -> tuple[int, int]:
    """(validation batches, catch trials) the study's sessions were served, previews aside: a sum of
    one row a session (`SessionServed`), not a count of the study's claims."""
    totals = SessionServed.objects.filter(study_session__study_id=study_id, study_session__is_preview=False).aggregate(
        batches=Sum("batches"), catch=Sum("catch_trials")
    )
    return totals["batches"] or 0, totals["catch"] or 0
