"""Hypotheses written per study × dataset × split × genre, maintained (issue 24.3: the cost page).

The cost page counts "hypotheses" as a submitted writing claim's pairs by its own worker, in a
study session. Counting that at read time joins every pair of the corpus to its premise's writing
claims (4.5 s cold at 433k pairs). Here the count is kept as append-only signed deltas
(`HypothesisTally`, the core's `Tally` pattern: writers only INSERT, so concurrent writers never
wait on a shared row), written in the writer's transaction:

  - the writing submit (`collection.services.submit_hypotheses`): three pairs a submit;
  - the adversarial task's finish (`adversarial.services._finish`): one pair or none;
  - split assignment (`collection.splits`): a premise's pairs move to their new split;
  - a pair or premise deleted on its own (the admin): its pairs leave (`pair_deleting`). A
    dataset's or a study's deletion takes its tally rows with it (foreign keys, CASCADE).

A read is the SUM of `n` per key (`counts`); `fold` replaces the deltas by one row per key now and
then. Anything else that changes what is counted (a study session deleted, so its claims no longer
name a study; a bulk load around the writers, e.g. bench/run.py's COPY) is repaired by `rebuild`
(`manage.py rebuild_hypothesis_tally`), which compares the deltas with a fresh count.
"""

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, F, Q, QuerySet, Sum

from corpus import tallies
from corpus.models import Dataset, Pair, Premise
from crowd.models import ClaimStatus, StudySession

from .models import HypothesisTally, WritingClaim

KEY = ("study_id", "dataset_id", "split", "genre_id")
FOLD_EVERY = 200  # a writer folds after one commit in this many (on average)
FOLD_LOCK = 0x4E11C0  # advisory lock key: one fold or rebuild at a time (PostgreSQL)

Key = tuple[Any, ...]


def _insert(deltas: Mapping[Key, int]) -> int:
    rows = [HypothesisTally(**dict(zip(KEY, key, strict=True)), n=n) for key, n in deltas.items() if n]
    if rows:
        HypothesisTally.objects.bulk_create(rows, batch_size=500)
        transaction.on_commit(_maybe_fold)
    return len(rows)


def written(study_session: StudySession | None, premise: Premise, pairs: int) -> int:
    """Count `pairs` hypotheses written on `premise` in `study_session` (none outside a study):
    one INSERT in the caller's transaction."""
    if study_session is None or not pairs:
        return 0
    return _insert({(study_session.study_id, premise.dataset_id, premise.split, premise.genre_id): pairs})


# --- the fresh count (what the cost page used to run) -----------------------------------------


def _written_pairs() -> QuerySet[Pair]:
    """Pairs written in a study: a submitted writing claim on their premise, by their author, in a session."""
    return Pair.objects.filter(
        premise__writing_claims__status=ClaimStatus.SUBMITTED,
        premise__writing_claims__study_session__isnull=False,
        premise__writing_claims__worker=F("author"),
    )


def fresh_counts(dataset: Dataset | None = None, premises: QuerySet[Premise] | None = None) -> dict[Key, int]:
    """{KEY: hypotheses} counted from the pairs and claims (one grouped statement)."""
    pairs = _written_pairs()
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    if premises is not None:
        pairs = pairs.filter(premise__in=premises.values("pk"))
    rows = (
        pairs.values_list(
            "premise__writing_claims__study_session__study_id", "dataset_id", "premise__split", "premise__genre_id"
        )
        .annotate(n=Count("id"))
        .order_by()
    )
    return {tuple(row[:-1]): row[-1] for row in rows}


def counts(dataset: Dataset | None = None) -> dict[Key, int]:
    """{KEY: hypotheses} from the maintained deltas (one grouped statement over a few rows)."""
    tallies = HypothesisTally.objects.all()
    if dataset is not None:
        tallies = tallies.filter(dataset=dataset)
    rows = tallies.values_list(*KEY).annotate(total=Sum("n")).order_by()
    return {tuple(row[:-1]): row[-1] for row in rows if row[-1]}


# --- writers other than the submits ------------------------------------------------------------


def premises_moving(premises: QuerySet[Premise], split: str) -> int:
    """These premises are about to move to `split` (in the caller's transaction): their
    hypotheses move with them. One grouped read of their pairs and one INSERT."""
    deltas: Counter[Key] = Counter()
    for (study, dataset, old_split, genre), n in fresh_counts(premises=premises).items():
        if old_split != split:
            deltas[(study, dataset, old_split, genre)] -= n
            deltas[(study, dataset, split, genre)] += n
    return _insert(deltas)


def _deletes_pairs_alone(origin: Any) -> bool:
    """A delete started from pairs or premises (the admin's), not from a dataset or a study,
    whose deletion removes their tally rows by CASCADE."""
    model = origin.model if isinstance(origin, QuerySet) else type(origin)
    return model in (Pair, Premise)


def pair_deleting(sender: type[Pair], instance: Pair, origin: Any = None, **kwargs: Any) -> None:
    """pre_delete receiver (connected in collection.apps): a written pair deleted on its own, or
    with its premise, leaves the count. Runs before any row of the delete is gone (the writing
    claim is still there to name the study), in the delete's transaction."""
    if instance.author_id is None or not _deletes_pairs_alone(origin):
        return
    studies = WritingClaim.objects.filter(
        premise_id=instance.premise_id,
        worker_id=instance.author_id,
        status=ClaimStatus.SUBMITTED,
        study_session__isnull=False,
    ).values_list("study_session__study_id", "premise__dataset_id", "premise__split", "premise__genre_id")
    deltas: Counter[Key] = Counter()
    for key in studies:
        deltas[key] -= 1
    _insert(deltas)


# --- folding and rebuilding ----------------------------------------------------------------------


def _maybe_fold() -> None:
    # With a broker the beat folds (collection.fold_hypothesis_tally), off every writer's request.
    if not settings.TALLY_FOLDS_ON_BEAT and random.random() < 1 / FOLD_EVERY:
        fold()


def fold() -> int:
    """Replace every delta by one row per key (zero sums dropped); returns rows written.

    PostgreSQL: one statement (`WITH gone AS (DELETE ... RETURNING) INSERT ... SELECT sum(n)`), so
    exactly the rows deleted are summed; deltas not yet committed stay as they are. A concurrent
    fold or rebuild makes it skip a turn. SQLite serialises writers: read, delete, insert.
    """
    table = HypothesisTally._meta.db_table
    columns = "study_id, dataset_id, split, genre_id"
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [FOLD_LOCK])
                acquired = cursor.fetchone()
                if not (acquired and acquired[0]):
                    return 0
                cursor.execute(
                    f"WITH gone AS (DELETE FROM {table} RETURNING {columns}, n) "
                    f"INSERT INTO {table} ({columns}, n) "
                    f"SELECT {columns}, sum(n) FROM gone GROUP BY {columns} HAVING sum(n) <> 0"
                )
                return cursor.rowcount
        sums = counts()
        HypothesisTally.objects.all().delete()
        HypothesisTally.objects.bulk_create(
            [HypothesisTally(**dict(zip(KEY, key, strict=True)), n=n) for key, n in sums.items()], batch_size=500
        )
        return len(sums)


def rebuild(dataset: Dataset | None = None) -> int:
    """Set the deltas (of a dataset, or all) to a fresh count; returns the keys that differed.

    corpus.tallies' `check_and_rebuild_tallies` (under this tally's fold lock): the fresh count, the
    deltas read and the deltas deleted are of one snapshot, so a submit's delta committed meanwhile
    is in none of them and stays on top of the rebuilt rows.
    """
    scoped = HypothesisTally.objects.filter(Q(dataset=dataset) if dataset is not None else Q())
    report = tallies.check_and_rebuild_tallies(
        [tallies.CheckedTally(HypothesisTally, KEY, scoped)],
        lambda: {HypothesisTally: fresh_counts(dataset)},
        source="the pairs and writing claims",
        lock=FOLD_LOCK,
    )
    return report.keys
