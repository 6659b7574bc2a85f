"""Claiming a premise for the hypothesis-writing task (and adversarial writing, which claims
through `claim_next_premise`); taking an expired claim back.

The claim policy, top to bottom (see `claim_next_premise`):
  1. a worker who reloads gets their own open, unexpired claim back;
  2. their stale claim is marked expired (it no longer counts against the premise);
  3. a candidate premise is available, has a split, still needs writings
     (writings done + open unexpired claims < dataset.writings_per_premise) and was never
     claimed by this worker; the least-written come first so work spreads evenly;
  4. the candidate's claim-order row (`ORDER_TABLE`) is locked with SELECT ... FOR NO KEY UPDATE
     SKIP LOCKED, so two workers asking at the same moment never wait on, or get, the same
     premise. The steps are every task's (`crowd.claiming`); the writing claim runs them, with the
     study's serving order, in one call of a database function (`_claim_statement`), and takes an
     expired claim back by the rule `WRITING_CLAIMS`.

Whatever else changes a premise's room (a submit's writings done, a hold, a retirement, a split)
updates the premise, whose trigger updates its order row and so waits for a claimer's lock on it.
Those writers lock the premise FOR NO KEY UPDATE, never FOR UPDATE: a claim's insert key-shares
the premise at its commit while it holds the order row, and a FOR UPDATE there would deadlock.
"""

import contextlib
import functools
import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from base.cached_plans import CachedStatement
from corpus.models import Dataset, Premise, PremiseStatus, Worker, WorkerExclusion
from crowd.claiming import ClaimRule, db_time, is_live, live_claims_sql, live_params, lock_clause, marks
from crowd.holds import HoldRenewal, others_waiting, take_backs_allowed
from crowd.models import ClaimStatus, ServingOrder, Study, StudySession

from .models import StudyServed, WritingClaim

# How many locked candidates a claim re-checks before it gives up (each was full on a re-count).
MAX_CANDIDATES_PER_CLAIM = 20


class ClaimExpired(Exception):
    """The task's time ran out before its submit: nothing was saved (the worker is told so)."""


class ClaimAlreadySubmitted(Exception):
    """The task was already saved (or released by a report): a second submit saves nothing."""


NOT_TAKING_PART = (
    "Your account is not taking part in this task at the moment. "
    "If you think this is a mistake, please contact the researchers."
)


class NotAllowedToWrite(Exception):
    """The team of the dataset excluded the worker: no premise is held for them."""

    message = NOT_TAKING_PART


# A premise's live claims, in the writing claim's statements (the premise is `p`, its claim-order
# row `o`). Params: `live_params(now)`.
_LIVE_CLAIMS = live_claims_sql("collection_writingclaim", "premise_id", "p.id")
_LIVE_CLAIMS_OF_ORDER = live_claims_sql("collection_writingclaim", "premise_id", "o.premise_id")

# The writing claim's order: one narrow row a premise (dataset, genre, claimable, writings done,
# claims made), copied from the premise by triggers (collection migration 0017). A claim walks,
# locks and updates this row, never the wide premise row with its fifteen indexes.
ORDER_TABLE = "collection_premise_claim_order"


# The inputs of the candidate lock by name, and the claim function's variable holding each.
_CANDIDATE_VARIABLES = {
    "dataset": "v_dataset",
    "genre": "v_genre",
    "writings": "v_writings",
    "worker": "v_worker",
    "open": "v_open",
    "now": "v_now",
    "team": "v_team",
    "genres": "v_pool_genres",
    "sources": "v_pool_sources",
    "tried": "v_tried",
    "shuffle": "v_shuffle",
}
# A random study's permutation of the premise ids: id * a large odd number, modulo a prime below 2^32.
_PERMUTATION_PRIME = 4294967291


def _candidate_sql(
    *, has_dataset: bool, genres: int, has_sources: bool, shuffled: bool, wanted: int, wait: bool
) -> tuple[str, list[str]]:
    """The candidate lock for a request of this shape (`genres`: how many genres the pool names, 2
    for several), with `%s` for each input, and each input's name (`_CANDIDATE_VARIABLES`) in order.
    The text depends only on the shape, so each shape keeps one plan (`_claim_statement`)."""
    names: list[str] = []
    joined = f" INNER JOIN {Premise._meta.db_table} p ON p.id = o.premise_id" if has_sources else ""
    if has_dataset:
        of_dataset, limit = "o.dataset_id = %s", "%s"
        names.append("dataset")
    else:
        joined += " INNER JOIN collection_dataset d ON d.id = o.dataset_id"
        of_dataset, limit = "NOT d.is_imported", "d.writings_per_premise"
    one_genre = has_dataset and genres == 1
    if one_genre:
        # Dataset and genre lead `premise_genre_claim_order_walk`: the walk stays inside the genre.
        of_dataset += " AND o.genre_id = %s"
        names.append("genre")
    if has_dataset:
        # The range's end: only premises still wanting writings are read, so a pool with none
        # left is an empty index range, not a walk of its written premises.
        of_dataset += " AND o.writings_done < %s"
        names.append("writings")
    names += ["worker", "open", "now"]
    if has_dataset:
        names.append("writings")
    # The exclusion is a wall: an exclusion committed after the claim began still holds.
    team = "%s" if has_dataset else "d.team_id"
    names += ["worker", "team"] if has_dataset else ["worker"]
    sql = (
        f"SELECT o.premise_id FROM {ORDER_TABLE} o{joined} WHERE o.claimable AND {of_dataset}"
        " AND NOT (o.premise_id IN (SELECT w.premise_id FROM collection_writingclaim w WHERE w.worker_id = %s))"
        f" AND o.writings_done + {_LIVE_CLAIMS_OF_ORDER} < {limit}"
        f" AND NOT EXISTS (SELECT 1 FROM {WorkerExclusion._meta.db_table} x WHERE x.worker_id = %s AND x.team_id = {team})"
    )
    if genres and not one_genre:
        sql += " AND o.genre_id = ANY(%s)"
        names.append("genres")
    if has_sources:
        sql += " AND p.source = ANY(%s)"
        names.append("sources")
    sql += " AND NOT (o.premise_id = ANY(%s))"
    names.append("tried")
    if shuffled:
        sql += f" ORDER BY o.writings_done, o.claims_made, MOD(o.premise_id * 2654435761 + %s, {_PERMUTATION_PRIME}), o.premise_id"
        names.append("shuffle")
    else:
        sql += " ORDER BY o.writings_done, o.claims_made, o.premise_id"
    # A number, not an input: a kept plan knows it wants one row and walks the index, where a
    # LIMIT it cannot see is planned as a tenth of the rows.
    sql += f" LIMIT {int(wanted)}{lock_clause('o', wait=wait)}"
    return sql, names


def candidate_statement(
    worker: Worker,
    now: datetime,
    *,
    dataset: Dataset | None,
    pool: tuple[list[int], list[str]] = ([], []),
    tried: Sequence[int] = (),
    wanted: int = 1,
    wait: bool = False,
    shuffle_seed: int | None = None,
) -> tuple[str, list[Any]]:
    """The writing claim's candidate lock, as the claim's function runs it, with values for its
    inputs: up to `wanted` premises this worker could be given now, least-written first, locked
    (`crowd.claiming.lock_clause`), leaving out those `tried`; `pool`, the genres and import files
    it keeps to.

    A premise is available, has a split, still needs writings (writings done + open unexpired
    claims < the dataset's writings_per_premise) and was never claimed by this worker. The
    statement reads and locks the premise's row of `ORDER_TABLE`. With one dataset (the usual case)
    it reads `dataset_id = %s AND writings_done < %s ... ORDER BY writings_done, claims_made,
    premise_id`, which walks the partial index `premise_claim_order_walk` from its start to the end
    of its range and stops at the first premise with room, probing each passed premise's open claims
    (one index lookup each). `claims_made` grows with each claim, so premises held by open claims
    sort after the unclaimed ones and the walk seldom passes any: O(log n). A pool of one genre (a
    balanced study's group) also reads `genre_id = %s`, leading `premise_genre_claim_order_walk`: a
    genre with nothing left is an empty range, not a walk of the dataset. Without a dataset: every
    dataset we collect ourselves.

    `shuffle_seed` (a study served in random order) breaks the ties of writings done and claims
    made by a permutation of the premise ids of its own instead of import order: integer arithmetic,
    at the cost of sorting the least-written premises on each claim.
    """
    genres, sources = pool
    sql, names = _candidate_sql(
        has_dataset=dataset is not None,
        genres=min(len(genres), 2),
        has_sources=bool(sources),
        shuffled=shuffle_seed is not None,
        wanted=wanted,
        wait=wait,
    )
    open_status, clock = live_params(now)
    values: dict[str, Any] = {
        "dataset": dataset.pk if dataset is not None else None,
        "genre": genres[0] if genres else None,
        "writings": dataset.writings_per_premise if dataset is not None else None,
        "worker": worker.pk,
        "open": open_status,
        "now": clock,
        "team": dataset.team_id if dataset is not None else None,
        "genres": list(genres),
        "sources": list(sources),
        "tried": list(tried),
        "shuffle": shuffle_seed % _PERMUTATION_PRIME if shuffle_seed is not None else None,
    }
    return sql, [values[name] for name in names]


def _with_variables(sql: str, names: Sequence[str]) -> str:
    """`sql` with each `%s` replaced by the claim function's variable for that input's name."""
    parts = sql.split("%s")
    assert len(parts) == len(names) + 1
    return parts[0] + "".join(_CANDIDATE_VARIABLES[name] + part for name, part in zip(names, parts[1:], strict=True))


def _locking_candidate() -> str:
    """PL/pgSQL that locks the next candidate of the pool in `v_pool_genres` and `v_pool_sources`
    into `v_locked`: the candidate statement of that shape (`_candidate_sql`), one static statement
    a shape, so that each keeps its plan in the connection."""

    def statement(**shape: Any) -> str:
        text = _with_variables(*_candidate_sql(wanted=1, **shape))
        return text.replace("SELECT o.premise_id ", "SELECT o.premise_id INTO v_locked ", 1) + ";"

    def by_wait(**shape: Any) -> str:
        return f"IF v_wait THEN {statement(wait=True, **shape)} ELSE {statement(wait=False, **shape)} END IF;"

    def by_order(**shape: Any) -> str:
        return (
            f"IF v_shuffle IS NULL THEN {by_wait(shuffled=False, **shape)}"
            f" ELSE {by_wait(shuffled=True, **shape)} END IF;"
        )

    def by_sources(**shape: Any) -> str:
        return (
            f"IF cardinality(v_pool_sources) = 0 THEN {by_order(has_sources=False, **shape)}"
            f" ELSE {by_order(has_sources=True, **shape)} END IF;"
        )

    # Without a dataset there is no study, so no pool and no order of its own.
    return (
        f"IF v_dataset IS NULL THEN {by_wait(has_dataset=False, genres=0, has_sources=False, shuffled=False)}"
        f" ELSIF cardinality(v_pool_genres) = 0 THEN {by_sources(has_dataset=True, genres=0)}"
        f" ELSIF cardinality(v_pool_genres) = 1 THEN {by_sources(has_dataset=True, genres=1)}"
        f" ELSE {by_sources(has_dataset=True, genres=2)} END IF;"
    )


def _count_claims(locked: list[int], claimed: list[int], now: datetime) -> None:
    """One more claim made on each claimed premise (its order row is locked): it sorts after the unclaimed ones."""
    if claimed:
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {ORDER_TABLE} SET claims_made = claims_made + 1 WHERE premise_id IN ({marks(claimed)})",
                claimed,
            )


_TAKEN_FIELDS = [f for f in WritingClaim._meta.concrete_fields if not f.primary_key and f.attname != "premise_id"]
_FIELDS = [f.attname for f in WritingClaim._meta.concrete_fields]


def _columns_of(table: str) -> str:
    """A writing claim's columns in `_FIELDS` order, of `table` (a row variable): what `_claim_of` reads."""
    return ", ".join(f"{table}.{connection.ops.quote_name(str(f.column))}" for f in WritingClaim._meta.concrete_fields)


def _claim_of(row: Sequence[Any]) -> WritingClaim:
    """A WritingClaim from a row of `_columns_of`, as the ORM loads one."""
    claim = WritingClaim.from_db(connection.alias, _FIELDS, row)
    assert isinstance(claim, WritingClaim)
    return claim


def _claim_types(fields: Sequence[Any]) -> list[str]:
    """The SQL types of these WritingClaim fields' columns, as a cached statement declares them."""
    return [str(f.db_type(connection)) for f in fields]


# The claim's inputs, in the order `_claim_once` passes them: (variable, SQL type).
_CLAIM_INPUTS = [
    ("v_worker", "bigint"),
    ("v_dataset", "bigint"),
    ("v_team", "bigint"),
    ("v_writings", "integer"),
    ("v_study", "bigint"),
    ("v_serving", "text"),
    ("v_seed", "bigint"),
    ("v_named_sources", "text[]"),
    ("v_counts_served", "boolean"),
    ("v_shard", "integer"),
    ("v_now", "timestamptz"),
    ("v_open", "text"),
    ("v_expired", "text"),
    ("v_available", "text"),
    ("v_tried", "bigint[]"),
]


@functools.cache
def _claim_statement() -> CachedStatement:
    """The whole writing claim, one call of a PL/pgSQL function (`base.cached_plans`), each of its
    statements with a snapshot of its own:

    1. the worker's open claims whose time ran out are marked expired (they hold no place already);
    2. a worker the dataset's team excluded gets nothing (`corpus.selectors.is_excluded_in`'s rule);
    3. a worker who reloads gets their open claim back;
    4. the study's serving (`Study.serving_order`). Import order: the least-written premises by id.
       Random: a permutation of the premise ids of the study's own (`candidate_statement`).
       Balanced: the pool's groups, its genres when it holds two or more (named by the study, else
       the dataset's, `PremiseGroup`), else its files, least-served first by the study's claims so
       far (`StudyServed`), ties in the study's random order, so a pool of fiction and travel is
       written on half and half whatever the import order; each group is asked in turn and the whole
       pool last, unless the groups are the pool. A group with nothing left is an empty index range;
    5. a candidate is locked (`candidate_statement`), skipping those another claimer holds and those
       `v_tried`; under the lock, in a statement of its own (so it sees every claim committed
       before), the premise's room is counted again, and with room the claim is inserted, the
       premise's `claims_made` moved and, in a study, the claim counted in its `StudyServed` shard,
       the claim's last lock (`crowd.services.LOCK_ORDER`). When every candidate is locked by
       someone claiming or submitting right now, those may still leave room
       (writings_per_premise > 1, or a claim that fails), so a second look waits for one rather
       than say "no tasks" while work is left. A premise found full ends the call ("full"): the
       caller asks again without it (`_claim_once`), the lock let go;
    6. with nothing to lock, the same worker may have won the last premise in another tab meanwhile:
       their open claim, read.

    Returns one row: what came of it ("excluded", "own", "made", "full" or "none"), the premise
    locked, and the claim's columns. Each statement reads by keys and is planned once for the
    connection, with sequential scans off (`CachedStatement.index_scans`): planned while the claim
    table was empty, a connection's claims would otherwise read it whole for as long as it lives.
    """
    through = Study.pool_genres.through._meta.db_table
    claim_inputs = [
        (f"v_c_{f.column}", kind) for f, kind in zip(_TAKEN_FIELDS, _claim_types(_TAKEN_FIELDS), strict=True)
    ]
    inputs = [*_CLAIM_INPUTS, *claim_inputs]
    declare = " ".join(f"{name} ALIAS FOR %s;" for name, _ in inputs) + (
        " v_named_genres bigint[]; v_group_genres bigint[] := '{}'; v_group_sources text[] := '{}';"
        " v_covered boolean := false; v_pools integer; v_shuffle bigint; v_pool_genres bigint[];"
        " v_pool_sources text[]; v_genre bigint; v_locked bigint;"
        " v_wait boolean := false; v_excluded boolean; v_look integer; v_index integer; v_claim collection_writingclaim;"
        " v_outcome text := 'none';"
    )
    # The worker's open claim by the index that allows one (`one_open_writing_claim_per_worker`): a
    # generic plan uses a partial index only for the value written in its predicate.
    own_open = f"c.worker_id = v_worker AND c.status = '{ClaimStatus.OPEN.value}'"
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in _TAKEN_FIELDS)
    served_of = "SELECT s.{key}, SUM(s.claims) AS n FROM collection_studyserved s WHERE s.study_id = v_study AND {where} GROUP BY s.{key}"
    prelude = f"""<<claiming>> BEGIN
    WITH expired AS (UPDATE collection_writingclaim c SET status = v_expired
            WHERE {own_open} AND c.expires_at <= v_now RETURNING id)
        SELECT EXISTS (SELECT 1 FROM {WorkerExclusion._meta.db_table} x WHERE x.worker_id = v_worker AND x.team_id = v_team)
        INTO v_excluded FROM (SELECT COUNT(*) FROM expired) marked;
    IF v_excluded THEN
        v_outcome := 'excluded';
        EXIT claiming;
    END IF;
    SELECT * INTO v_claim FROM collection_writingclaim c WHERE {own_open} AND c.expires_at > v_now;
    IF FOUND THEN
        v_outcome := 'own';
        EXIT claiming;
    END IF;
    v_named_genres := ARRAY(SELECT genre_id FROM {through} WHERE study_id = v_study);
    IF v_serving = '{ServingOrder.RANDOM.value}' THEN
        v_shuffle := v_seed % {_PERMUTATION_PRIME};
    ELSIF v_serving = '{ServingOrder.BALANCED.value}' THEN
        v_group_genres := CASE WHEN cardinality(v_named_genres) > 0 THEN v_named_genres ELSE
            ARRAY(SELECT DISTINCT genre_id FROM collection_premisegroup WHERE dataset_id = v_dataset
                  AND (cardinality(v_named_sources) = 0 OR source = ANY(v_named_sources))) END;
        IF cardinality(v_group_genres) > 1 THEN
            v_group_genres := ARRAY(SELECT g FROM unnest(v_group_genres) g
                LEFT JOIN ({served_of.format(key="genre_id", where="(cardinality(v_named_sources) = 0 OR s.source = ANY(v_named_sources))")}) served
                ON served.genre_id = g ORDER BY COALESCE(served.n, 0), (g * 2654435761 + v_seed) % {_PERMUTATION_PRIME}, g);
            v_covered := cardinality(v_named_genres) > 0;
        ELSE
            v_group_genres := '{{}}';
            v_group_sources := CASE WHEN cardinality(v_named_sources) > 0 THEN v_named_sources ELSE
                ARRAY(SELECT DISTINCT source FROM collection_premisegroup WHERE dataset_id = v_dataset AND source <> ''
                      AND (cardinality(v_named_genres) = 0 OR genre_id = ANY(v_named_genres))) END;
            IF cardinality(v_group_sources) > 1 THEN
                v_group_sources := ARRAY(SELECT f FROM unnest(v_group_sources) f
                    LEFT JOIN ({served_of.format(key="source", where="(cardinality(v_named_genres) = 0 OR s.genre_id = ANY(v_named_genres))")}) served
                    ON served.source = f ORDER BY COALESCE(served.n, 0), sha256(convert_to(v_seed::text || f, 'UTF8')), f);
                v_covered := cardinality(v_named_sources) > 0;
            ELSE
                v_group_sources := '{{}}';
            END IF;
        END IF;
    END IF;
    v_pools := cardinality(v_group_genres) + cardinality(v_group_sources) + CASE WHEN v_covered THEN 0 ELSE 1 END;
    -- A look that skips the premises other claimers hold, then, when it locked none, one that waits
    -- for one: those may still leave room (writings_per_premise > 1, or a claim that fails).
    FOR v_look IN 1 .. 2 LOOP
        v_wait := v_look = 2;
        v_locked := NULL;
        FOR v_index IN 1 .. v_pools LOOP
            IF v_index <= cardinality(v_group_genres) THEN
                v_pool_genres := ARRAY[v_group_genres[v_index]];
                v_pool_sources := v_named_sources;
            ELSIF v_index <= cardinality(v_group_genres) + cardinality(v_group_sources) THEN
                v_pool_genres := v_named_genres;
                v_pool_sources := ARRAY[v_group_sources[v_index - cardinality(v_group_genres)]];
            ELSE
                v_pool_genres := v_named_genres;
                v_pool_sources := v_named_sources;
            END IF;
            v_genre := v_pool_genres[1];
            {_locking_candidate()}
            EXIT WHEN v_locked IS NOT NULL;
        END LOOP;
        EXIT WHEN v_locked IS NOT NULL;
    END LOOP;
    IF v_locked IS NOT NULL THEN
        WITH room AS (SELECT p.id, p.genre_id, p.source FROM collection_premise p
                INNER JOIN collection_dataset d ON d.id = p.dataset_id
                WHERE p.id = v_locked AND p.status = v_available
                AND p.writings_done + {_with_variables(_LIVE_CLAIMS, ["open", "now"])}
                    < d.writings_per_premise),
            claimed AS (INSERT INTO collection_writingclaim ({columns}, premise_id)
                SELECT {", ".join(name for name, _ in claim_inputs)}, room.id FROM room RETURNING *),
            counted AS (UPDATE {ORDER_TABLE} SET claims_made = claims_made + 1
                WHERE premise_id IN (SELECT premise_id FROM claimed)),
            served AS (INSERT INTO collection_studyserved AS s (study_id, genre_id, source, shard, claims)
                SELECT v_study, genre_id, source, v_shard, 1 FROM room WHERE v_counts_served AND EXISTS (SELECT 1 FROM claimed)
                ON CONFLICT (study_id, genre_id, source, shard) DO UPDATE SET claims = s.claims + 1)
        SELECT * INTO v_claim FROM claimed;
        v_outcome := CASE WHEN v_claim.id IS NULL THEN 'full' ELSE 'made' END;
        EXIT claiming;
    END IF;
    -- Nothing to lock: the same worker may have won the last premise in another tab meanwhile.
    SELECT * INTO v_claim FROM collection_writingclaim c WHERE {own_open} AND c.expires_at > v_now;
    IF FOUND THEN
        v_outcome := 'own';
    END IF;
END claiming;"""
    return CachedStatement(
        "collection_writing_claim",
        f"SELECT v_outcome, v_locked, {_columns_of('v_claim')}",
        [kind for _, kind in inputs],
        ["text", "bigint", *_claim_types(WritingClaim._meta.concrete_fields)],
        prelude=prelude,
        declare=declare,
        generic_plans=True,
        index_scans=True,
    )


def study_seed(study: Study) -> int:
    """A study's own random number: its random order's permutation, and a balanced order's ties."""
    return int(hashlib.sha256(f"{study.pk}:{study.code_secret}".encode()).hexdigest()[:8], 16)


class _FoundFull(Exception):
    """A claim's call locked a premise that had no room after all (a claim committed meanwhile took
    its last place); raised to roll back the caller's savepoint, which lets the premise go."""

    def __init__(self, premise_id: int) -> None:
        super().__init__(premise_id)
        self.premise_id = premise_id


def _claim_once(worker: Worker, dataset: Dataset | None, study_session: StudySession | None) -> WritingClaim | None:
    """The worker's open claim, or a claim on the first claimable premise with room: one call
    (`_claim_statement`) and, outside a caller's transaction, a transaction of its own (inside one,
    a savepoint, so a claim that fails leaves the caller's work as it was).

    A premise found full ends its call, and so lets go of the premise's lock, before the next call
    leaves it out: a claim never waits for a premise while holding another, so two claimers never
    wait on each other."""
    now = timezone.now()
    study = study_session.study if study_session is not None else None
    # A researcher's preview is served as a claim but is no claim made in the study.
    counts_served = study_session is not None and not study_session.is_preview
    claim = WritingClaim(
        worker_id=worker.pk,
        study_session_id=study_session.pk if study_session is not None else None,
        expires_at=WRITING_CLAIMS.expiry(now, study),
    )
    asked: list[Any] = [
        worker.pk,
        dataset.pk if dataset is not None else None,
        dataset.team_id if dataset is not None else None,
        dataset.writings_per_premise if dataset is not None else None,
        study.pk if study is not None else None,
        study.serving_order if study is not None else "",
        study_seed(study) if study is not None else None,
        list(study.pool_sources or []) if study is not None else [],
        counts_served,
        worker.pk % StudyServed.SHARDS,
        db_time(now),
        ClaimStatus.OPEN,
        ClaimStatus.EXPIRED,
        PremiseStatus.AVAILABLE,
    ]
    # Each column's value as an ORM insert sends it (defaults, the creation time), but the premise's.
    columns_made = [f.get_db_prep_save(f.pre_save(claim, True), connection) for f in _TAKEN_FIELDS]
    tried: list[int] = []
    for _ in range(MAX_CANDIDATES_PER_CLAIM):
        try:
            with transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext():
                ((outcome, locked, *columns),) = _claim_statement().run([*asked, tried, *columns_made])
                if outcome == "full":
                    raise _FoundFull(locked)
        except _FoundFull as full:
            tried.append(full.premise_id)
            continue
        if outcome == "excluded":
            raise NotAllowedToWrite(NOT_TAKING_PART)
        if outcome == "none":
            return None
        made = _claim_of(columns)
        if study_session is not None and made.study_session_id == study_session.pk:
            made.study_session = study_session  # as the caller had it (its study read already)
        return made
    return None


def lock_order_rows(premise_ids: Sequence[int]) -> None:
    """The premises' claim-order row locks, the ones every claimer takes, in id order: no claim is
    made on them until the caller's transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {ORDER_TABLE} WHERE premise_id = ANY(%s) ORDER BY premise_id FOR NO KEY UPDATE",
            [list(premise_ids)],
        )


def lock_written_premise(premise_id: int) -> Premise:
    """The premise a submit writes on, locked as a claimer locks it (with its dataset read): its row,
    FOR NO KEY UPDATE (a claim's insert key-shares it), then its claim-order row, so a claim counting
    the premise's room waits for the submit, and a clock read after this is later than the commit
    of any claim that took the place."""
    premise = Premise.objects.select_for_update(no_key=True, of=("self",)).select_related("dataset").get(pk=premise_id)
    lock_order_rows([premise_id])
    return premise


def _room(locked: list[int], now: datetime) -> list[tuple[int, int, object]]:
    """Each locked premise's free places, counted in a fresh statement under the lock (it sees every
    claim committed before it): writings wanted less writings done and live claims; none once the
    premise is held or retired."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.id, p.status, d.writings_per_premise, p.writings_done, "
            f"{_LIVE_CLAIMS} FROM collection_premise p INNER JOIN collection_dataset d ON d.id = p.dataset_id"
            f" WHERE p.id IN ({marks(locked)})",
            [*live_params(now), *locked],
        )
        counted = cursor.fetchall()
    return [
        (pk, wanted - done - live if status == PremiseStatus.AVAILABLE else 0, None)
        for pk, status, wanted, done, live in counted
    ]


# Writing (and adversarial writing): one premise a claim, least-written first (`_claim_statement`);
# `_room` and `_count_claims` are its rules for a take-back.
WRITING_CLAIMS = ClaimRule(
    model=WritingClaim,
    target="premise",
    room=_room,
    minutes_setting="WRITING_CLAIM_MINUTES",
    batched=False,
)


def renew_expired_claim(worker: Worker, claim_token: uuid.UUID | str) -> WritingClaim | None:
    """Hold an expired claim's premise for its worker again, if the premise is still free.

    For a worker whose time ran out while writing: their sentences can go to the same line.
    Returns the open claim, or None when it may not come back (`take_back_line`). Raises
    ClaimAlreadySubmitted for a claim already used.
    """
    return take_back_line(worker, claim_token)[0]


def take_back_line(worker: Worker, claim_token: uuid.UUID | str) -> tuple[WritingClaim | None, HoldRenewal]:
    """`renew_expired_claim`, with what happened: the claim held again (TAKEN_BACK), a claim still
    open (UNCHANGED), or None and why not: the worker holds another task (BUSY), the line was taken
    back as often as a hold may be (BACK_AT_LIMIT), another participant of the study waits for work
    (BACK_WAITED_FOR: crowd.holds.others_waiting), the premise has gone to others or was set aside
    (TAKEN). Every way back to an expired line (the hold's button, a late send, the next visit to
    the task) comes here, so its bounds hold for all of them."""
    now = timezone.now()
    with transaction.atomic():
        claim = WritingClaim.objects.select_for_update(of=("self",)).get(token=claim_token, worker=worker)
        if claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
            raise ClaimAlreadySubmitted("These sentences were already saved.")
        if is_live(claim, now):
            return claim, HoldRenewal.UNCHANGED
        if WRITING_CLAIMS.live(now).filter(worker=worker).exclude(pk=claim.pk).exists():
            return None, HoldRenewal.BUSY
        claim.status = ClaimStatus.EXPIRED  # it holds no place, whatever comes of this
        claim.save(update_fields=["status"])
        study = claim.study_session.study if claim.study_session else None
        if claim.take_backs >= take_backs_allowed(study):
            return None, HoldRenewal.BACK_AT_LIMIT
        minutes = (
            study.claim_minutes if study is not None and study.claim_minutes else settings.NLI["WRITING_CLAIM_MINUTES"]
        )
        if others_waiting([claim], worker.pk, now, minutes=minutes, live=WRITING_CLAIMS.live(now)):
            return None, HoldRenewal.BACK_WAITED_FOR
        # The premise's claim-order row lock, as every claimer takes it, then a fresh count of its places.
        lock_order_rows([claim.premise_id])
        if not any(free > 0 for _, free, _ in _room([claim.premise_id], now)):
            return None, HoldRenewal.TAKEN
        claim.status = ClaimStatus.OPEN
        claim.expires_at = WRITING_CLAIMS.expiry(now, study)
        claim.take_backs += 1
        claim.save(update_fields=["status", "expires_at", "take_backs"])
        _count_claims([claim.premise_id], [claim.premise_id], now)
        return claim, HoldRenewal.TAKEN_BACK


REOPEN_EXPIRED_WITHIN = timedelta(hours=24)


def reopen_expired_line(worker: Worker, *, study_session: StudySession | None = None) -> WritingClaim | None:
    """The worker's line whose hold ran out, held for them again when they come back for a task.

    Their typed sentences wait in the browser under that claim's token (static/js/worker.js): a
    new claim would show an empty page and the sentences would be lost. Only the latest claim of
    the same study visit that expired within a day, and only if its premise is still free
    (renew_expired_claim); otherwise None and the worker gets the next line as usual.
    """
    now = timezone.now()
    latest = (
        WritingClaim.objects.filter(
            worker=worker, study_session=study_session, created_at__gte=now - REOPEN_EXPIRED_WITHIN
        )
        .order_by("-created_at")
        .first()
    )
    if latest is None or latest.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
        return None
    if is_live(latest, now):
        return None  # still open: claim_next_premise returns it as it always has
    try:
        return renew_expired_claim(worker, latest.token)
    except ClaimAlreadySubmitted:
        return None


def claim_next_premise(
    worker: Worker, *, dataset: Dataset | None = None, study_session: StudySession | None = None
) -> WritingClaim | None:
    """Hold the next premise for `worker` and return the WritingClaim, or None when none is left.

    A study session's dataset wins over the default collection; without either, any dataset we
    collect ourselves (never an imported corpus).
    """
    if dataset is None and study_session is not None:
        dataset = study_session.study.dataset
    if dataset is None:
        dataset = Dataset.objects.filter(slug=settings.NLI["DEFAULT_DATASET"]).first()
    try:
        return _claim_once(worker, dataset, study_session)
    except IntegrityError:
        # The same worker asked twice at once (two tabs, a double click): the unique
        # constraints kept one claim; hand that one back.
        return _claim_once(worker, dataset, study_session)
