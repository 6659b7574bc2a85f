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
     premise. The steps are every task's (`crowd.claiming`, the writing task's rule `WRITING_CLAIMS`).

Whatever else changes a premise's room (a submit's writings done, a hold, a retirement, a split)
updates the premise, whose trigger updates its order row and so waits for a claimer's lock on it.
Those writers lock the premise FOR NO KEY UPDATE, never FOR UPDATE: a claim's insert key-shares
the premise at its commit while it holds the order row, and a FOR UPDATE there would deadlock.
"""

import contextlib
import functools
import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from base.cached_plans import CachedStatement
from corpus.models import Dataset, Premise, PremiseStatus, Worker, WorkerExclusion
from crowd.claiming import ClaimRule, claim_rows, is_live, live_claims_sql, live_params, lock_clause, marks
from crowd.holds import HoldRenewal, others_waiting, take_backs_allowed
from crowd.models import ClaimStatus, ServingOrder, Study, StudySession, TaskClaim
from crowd.selectors import pool_limits

from . import selectors
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
    """The writing claim's candidate lock: up to `wanted` premises this worker could be given now,
    least-written first, locked (`crowd.claiming.lock_clause`), leaving out those `tried`; `pool`, a
    study's genres and import files (`crowd.selectors.pool_limits`). Written in SQL: built by the ORM
    it costs the claim more CPU than the database spends on all its statements.

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

    The statement's text depends only on the request's shape, never on its values (genres, files
    and the premises tried are arrays), so one cached function serves every claim of a shape
    (`_lock_and_take_statement`).
    """
    sql, params, _ = _candidate(
        worker, now, dataset=dataset, pool=pool, tried=tried, wanted=wanted, wait=wait, shuffle_seed=shuffle_seed
    )
    return sql, params


def _candidate(
    worker: Worker,
    now: datetime,
    *,
    dataset: Dataset | None,
    pool: tuple[list[int], list[str]],
    tried: Sequence[int],
    wanted: int,
    wait: bool,
    shuffle_seed: int | None,
) -> tuple[str, list[Any], list[str]]:
    """`candidate_statement`, with the SQL type of each parameter."""
    params: list[Any] = []
    types: list[str] = []

    def takes(value: Any, kind: str) -> None:
        params.append(value)
        types.append(kind)

    genres, sources = pool
    joined = f" INNER JOIN {Premise._meta.db_table} p ON p.id = o.premise_id" if sources else ""
    if dataset is not None:
        of_dataset, limit = "o.dataset_id = %s", "%s"
        takes(dataset.pk, "bigint")
    else:
        joined += " INNER JOIN collection_dataset d ON d.id = o.dataset_id"
        of_dataset, limit = "NOT d.is_imported", "d.writings_per_premise"
    if dataset is not None and len(genres) == 1:
        # Dataset and genre lead `premise_genre_claim_order_walk`: the walk stays inside the genre.
        of_dataset += " AND o.genre_id = %s"
        takes(genres[0], "bigint")
    if dataset is not None:
        # The range's end: only premises still wanting writings are read, so a pool with none
        # left is an empty index range, not a walk of its written premises.
        of_dataset += " AND o.writings_done < %s"
        takes(dataset.writings_per_premise, "integer")
    takes(worker.pk, "bigint")
    for value, kind in zip(live_params(now), ("text", "timestamptz"), strict=True):
        takes(value, kind)
    if dataset is not None:
        takes(dataset.writings_per_premise, "integer")
    # The exclusion is a wall: an exclusion committed after the claim's first read still holds.
    team = "%s" if dataset is not None else "d.team_id"
    takes(worker.pk, "bigint")
    if dataset is not None:
        takes(dataset.team_id, "bigint")
    sql = (
        f"SELECT o.premise_id FROM {ORDER_TABLE} o{joined} WHERE o.claimable AND {of_dataset}"
        " AND NOT (o.premise_id IN (SELECT w.premise_id FROM collection_writingclaim w WHERE w.worker_id = %s))"
        f" AND o.writings_done + {_LIVE_CLAIMS_OF_ORDER} < {limit}"
        f" AND NOT EXISTS (SELECT 1 FROM {WorkerExclusion._meta.db_table} x WHERE x.worker_id = %s AND x.team_id = {team})"
    )
    if genres and not (dataset is not None and len(genres) == 1):
        sql += " AND o.genre_id = ANY(%s)"
        takes(list(genres), "bigint[]")
    if sources:
        sql += " AND p.source = ANY(%s)"
        takes(list(sources), "text[]")
    sql += " AND NOT (o.premise_id = ANY(%s))"
    takes(list(tried), "bigint[]")
    if shuffle_seed is None:
        sql += " ORDER BY o.writings_done, o.claims_made, o.premise_id"
    else:
        sql += " ORDER BY o.writings_done, o.claims_made, MOD(o.premise_id * 2654435761 + %s, 4294967291), o.premise_id"
        takes(shuffle_seed % 4294967291, "bigint")
    # A number, not a parameter: a plan kept for every call (`_lock_and_take_statement`) knows it
    # wants one row and walks the index, where a LIMIT it cannot see is planned as a tenth of the rows.
    sql += f" LIMIT {int(wanted)}{lock_clause('o', wait=wait)}"
    return sql, params, types


@dataclass(frozen=True)
class Serving:
    """How a study's claim walks its pool (`Study.serving_order`): the pool, each group it balances
    (the pool narrowed to one genre or one file, least-served first), and the random order's seed."""

    pool: tuple[list[int], list[str]] = ([], [])
    groups: tuple[tuple[list[int], list[str]], ...] = ()
    shuffle_seed: int | None = None
    # The groups are the pool's own genres or files, so together they are the pool: when every
    # group has nothing left, asking the whole pool would only walk the premises outside it.
    groups_cover_pool: bool = False


Served = dict[tuple[int, str], int]


def serving_of(study: Study | None, read: tuple[tuple[list[int], list[str]], Served] | None = None) -> Serving:
    """A study's serving. Balanced: the pool's groups, genres when it holds two
    or more, else its files, ordered by the study's claims in each so far (ties in random order),
    so a pool of fiction and travel is written on half and half whatever the import order (the
    claims made, `StudyServed`, kept by `_count_claims_served`); each
    group is tried in turn and the whole pool last. Random: a permutation of its own per study.
    Import order: the least-written premises by id, as before. `read`: the study's pool and served
    counts already read (`_first_read`), else read here."""
    if study is None:
        return Serving()
    pool = read[0] if read is not None else pool_limits(study)
    seed = int(hashlib.sha256(f"{study.pk}:{study.code_secret}".encode()).hexdigest()[:8], 16)
    if study.serving_order == ServingOrder.IMPORTED:
        return Serving(pool=pool)
    if study.serving_order == ServingOrder.RANDOM:
        return Serving(pool=pool, shuffle_seed=seed)
    genres, sources = pool
    served = read[1] if read is not None else selectors.study_served(study.pk)
    in_groups: list[tuple[list[int], list[str]]]
    group_genres = genres or selectors.pool_genres(study.dataset_id, sources)
    if len(group_genres) > 1:
        key = dict.fromkeys(group_genres, 0)
        for (genre, source), n in served.items():
            if genre in key and (not sources or source in sources):
                key[genre] += n
        genre_order = sorted(group_genres, key=lambda g: (key[g], (g * 2654435761 + seed) % 4294967291))
        in_groups = [([genre], sources) for genre in genre_order]
        if genres:
            return Serving(pool=pool, groups=tuple(in_groups), groups_cover_pool=True)
    else:
        group_sources = sources or selectors.pool_sources(study.dataset_id, genres)
        if len(group_sources) < 2:
            return Serving(pool=pool)
        by_source: dict[str, int] = {}
        for (genre, source), n in served.items():
            if not genres or genre in genres:
                by_source[source] = by_source.get(source, 0) + n
        source_order = sorted(
            group_sources, key=lambda name: (by_source.get(name, 0), hashlib.sha256(f"{seed}{name}".encode()).digest())
        )
        in_groups = [(genres, [name]) for name in source_order]
        if sources:
            return Serving(pool=pool, groups=tuple(in_groups), groups_cover_pool=True)
    return Serving(pool=pool, groups=tuple(in_groups))


def _count_claims(locked: list[int], claimed: list[int], now: datetime) -> None:
    """One more claim made on each claimed premise (its order row is locked): it sorts after the unclaimed ones."""
    if claimed:
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {ORDER_TABLE} SET claims_made = claims_made + 1 WHERE premise_id IN ({marks(claimed)})",
                claimed,
            )


_TAKEN_FIELDS = [f for f in WritingClaim._meta.concrete_fields if not f.primary_key]


@functools.cache
def _lock_and_take_statement(
    candidate_sql: str, candidate_types: tuple[str, ...], counts_served: bool
) -> CachedStatement:
    """One step of the writing claim, one call: the candidate lock (`candidate_statement`'s SQL for
    one premise), then, in a statement of its own under that lock, the claim taken: the premise's
    room counted again (`_room`'s rule; the statement's snapshot is taken under the lock, so it sees
    every claim committed before), the claim inserted if it has room, the premise's `claims_made`
    moved (`_count_claims`) and, in a study (`counts_served`), the claim counted in the study's
    `StudyServed` shard, the claim's last lock (`crowd.services.LOCK_ORDER`). Returns no row when
    nothing was locked, else the locked premise and the claim's columns (all NULL when it had no
    room). Parameters: the candidate's, then the premise's status and the live-claim rule, each
    column of the claim but the premise's (`_TAKEN_FIELDS`) and, with `counts_served`, the study and
    its served shard."""
    assert candidate_sql.startswith("SELECT o.premise_id FROM ")
    prelude = candidate_sql.replace("SELECT o.premise_id ", "SELECT o.premise_id INTO v_locked ", 1)
    prelude += "; IF v_locked IS NULL THEN RETURN; END IF;"
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in _TAKEN_FIELDS)
    served = (
        ", served AS (INSERT INTO collection_studyserved AS s (study_id, genre_id, source, shard, claims)"
        " SELECT %s, genre_id, source, %s, 1 FROM room WHERE EXISTS (SELECT 1 FROM claimed)"
        " ON CONFLICT (study_id, genre_id, source, shard) DO UPDATE SET claims = s.claims + 1)"
        if counts_served
        else ""
    )
    sql = (
        "WITH room AS (SELECT p.id, p.genre_id, p.source FROM collection_premise p"
        " INNER JOIN collection_dataset d ON d.id = p.dataset_id"
        f" WHERE p.id = v_locked AND p.status = %s AND p.writings_done + {_LIVE_CLAIMS} < d.writings_per_premise),"
        f" claimed AS (INSERT INTO collection_writingclaim ({columns})"
        f" SELECT {', '.join('room.id' if f.attname == 'premise_id' else '%s' for f in _TAKEN_FIELDS)} FROM room"
        " RETURNING *),"
        f" counted AS (UPDATE {ORDER_TABLE} SET claims_made = claims_made + 1"
        " WHERE premise_id IN (SELECT premise_id FROM claimed))"
        f"{served} SELECT v_locked, {_columns_of('claimed')} FROM (SELECT 1) one LEFT JOIN claimed ON true"
    )
    parameters = [*candidate_types, "text", "text", "timestamptz"]
    parameters += _claim_types([f for f in _TAKEN_FIELDS if f.attname != "premise_id"])
    if counts_served:
        parameters += ["bigint", "integer"]
    return CachedStatement(
        "collection_writing_claim_step",
        sql,
        parameters,
        ["bigint", *_claim_types(WritingClaim._meta.concrete_fields)],
        prelude=prelude,
        declare="v_locked bigint;",
    )


def _lock_and_take(
    worker: Worker,
    now: datetime,
    study_session: StudySession | None,
    candidate: tuple[str, list[Any], list[str]],
) -> tuple[int | None, WritingClaim | None]:
    """One step of the claim (`_lock_and_take_statement`): the premise it locked (None when none
    could be), and the claim made on it (None when it had no room after all)."""
    study = study_session.study if study_session is not None else None
    # A researcher's preview is served as a claim but is no claim made in the study.
    counts_served = study_session is not None and not study_session.is_preview
    candidate_sql, candidate_params, candidate_types = candidate
    statement = _lock_and_take_statement(candidate_sql, tuple(candidate_types), counts_served)
    claim = WritingClaim(worker=worker, study_session=study_session, expires_at=WRITING_CLAIMS.expiry(now, study))
    params: list[Any] = [*candidate_params, PremiseStatus.AVAILABLE, *live_params(now)]
    # Each column's value as an ORM insert sends it (defaults, the creation time), but the premise's.
    params += [
        f.get_db_prep_save(f.pre_save(claim, True), connection) for f in _TAKEN_FIELDS if f.attname != "premise_id"
    ]
    if counts_served:
        assert study_session is not None
        params += [study_session.study_id, worker.pk % StudyServed.SHARDS]
    rows = statement.run(params)
    if not rows:
        return None, None
    ((locked, *columns),) = rows
    if columns[0] is None:
        return locked, None
    made = _claim_of(columns)
    made.study_session = study_session  # as the caller had it (its study read already)
    return locked, made


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


# Writing (and adversarial writing): one premise a claim, least-written first, taken by one
# step (`_lock_and_take`); `_room` and `_count_claims` are its rules for a take-back.
WRITING_CLAIMS = ClaimRule(
    model=WritingClaim,
    target="premise",
    room=_room,
    minutes_setting="WRITING_CLAIM_MINUTES",
    batched=False,
)


# A group (a balanced study's genre or file) a claim found empty is asked after the others for a
# few seconds, in this process: a written-out genre stays the least served for good, and would cost
# every claim a statement first. It is asked last, never left out, so a claim whose other groups
# have nothing left still finds the work that came back to it (an expired claim, a withdrawal).
DRY_GROUP_SECONDS = 10.0
GroupKey = tuple[int | None, tuple[int, ...], tuple[str, ...]]
_dry_groups: dict[GroupKey, float] = {}


def _group_key(dataset: Dataset | None, pool: tuple[list[int], list[str]]) -> GroupKey:
    return (dataset.pk if dataset is not None else None, tuple(pool[0]), tuple(pool[1]))


def _dry_groups_last(
    dataset: Dataset | None, groups: Sequence[tuple[list[int], list[str]]]
) -> list[tuple[list[int], list[str]]]:
    """The groups in their serving order, those found empty in the last `DRY_GROUP_SECONDS` last."""
    clock = time.monotonic()
    dry = {index for index, group in enumerate(groups) if _dry_groups.get(_group_key(dataset, group), 0.0) > clock}
    return [group for index, group in enumerate(groups) if index not in dry] + [groups[index] for index in sorted(dry)]


_FIELDS = [f.attname for f in WritingClaim._meta.concrete_fields]


def _columns_of(table: str) -> str:
    """A writing claim's columns in `_FIELDS` order, of `table` (or a CTE's name): what `_claim_of` reads."""
    return ", ".join(f"{table}.{connection.ops.quote_name(str(f.column))}" for f in WritingClaim._meta.concrete_fields)


def _claim_of(row: Sequence[Any]) -> WritingClaim:
    """A WritingClaim from a row of `_columns_of`, as the ORM loads one."""
    claim = WritingClaim.from_db(connection.alias, _FIELDS, row)
    assert isinstance(claim, WritingClaim)
    return claim


@dataclass(frozen=True)
class FirstRead:
    """What a claim reads before it locks anything, in one statement (`_first_read`)."""

    excluded: bool
    pool: tuple[list[int], list[str]]
    served: Served
    own: WritingClaim | None


def _claim_types(fields: Sequence[Any]) -> list[str]:
    """The SQL types of these WritingClaim fields' columns, as a cached statement declares them."""
    return [str(f.db_type(connection)) for f in fields]


@functools.cache
def _first_read_statement() -> CachedStatement:
    """`_first_read`'s statement: its parameters are the worker's stale claims' status and rule, the
    exclusion's worker and team, the study twice, and the open claim's worker and rule."""
    through = Study.pool_genres.through._meta.db_table
    sql = (
        "WITH expired AS (UPDATE collection_writingclaim SET status = %s"
        " WHERE worker_id = %s AND status = %s AND expires_at <= %s RETURNING id)"
        f" SELECT EXISTS (SELECT 1 FROM {WorkerExclusion._meta.db_table} x WHERE x.worker_id = %s AND x.team_id = %s),"
        f" ARRAY(SELECT g.genre_id FROM {through} g INNER JOIN collection_genre n ON n.id = g.genre_id"
        " WHERE g.study_id = %s ORDER BY n.slug, n.id),"
        " (SELECT json_agg(json_build_array(s.genre_id, s.source, s.n)) FROM (SELECT genre_id, source,"
        " SUM(claims) AS n FROM collection_studyserved WHERE study_id = %s GROUP BY genre_id, source) s),"
        f" (SELECT COUNT(*) FROM expired), {_columns_of('c')}"
        " FROM (SELECT 1) one LEFT JOIN collection_writingclaim c"
        " ON c.worker_id = %s AND c.status = %s AND c.expires_at > %s"
    )
    return CachedStatement(
        "collection_writing_first_read",
        sql,
        [
            "text",
            "bigint",
            "text",
            "timestamptz",
            "bigint",
            "bigint",
            "bigint",
            "bigint",
            "bigint",
            "text",
            "timestamptz",
        ],
        ["boolean", "bigint[]", "json", "bigint", *_claim_types(WritingClaim._meta.concrete_fields)],
    )


def _first_read(worker: Worker, dataset: Dataset | None, study: Study | None, now: datetime) -> FirstRead:
    """One statement, atomic on its own: whether the dataset's team excluded the worker
    (`corpus.selectors.is_excluded_in`'s rule), the study's pool genres (`crowd.selectors.pool_limits`'
    rule, by genre slug) and its claims served (`selectors.study_served`), the worker's open unexpired
    claim, and their expired open claims marked expired (they hold no place already)."""
    study_id = study.pk if study is not None else None
    params = [ClaimStatus.EXPIRED, worker.pk, *live_params(now), worker.pk]
    params += [dataset.team_id if dataset is not None else None, study_id, study_id, worker.pk, *live_params(now)]
    ((excluded, genres, served, _, *claim),) = _first_read_statement().run(params)
    return FirstRead(
        excluded=excluded,
        pool=(list(genres), list(study.pool_sources or []) if study is not None else []),
        served={(genre, source): n for genre, source, n in served or []},
        own=_claim_of(claim) if claim[0] is not None else None,
    )


def _own_open_claim(worker: Worker, now: datetime) -> WritingClaim | None:
    claim = next(
        iter(
            WritingClaim.objects.raw(
                "SELECT * FROM collection_writingclaim WHERE worker_id = %s AND status = %s"
                + lock_clause("collection_writingclaim", wait=True),
                [worker.pk, ClaimStatus.OPEN],
            )
        ),
        None,
    )
    if claim is None:
        return None
    if claim.expires_at > now:
        return claim
    claim.status = ClaimStatus.EXPIRED
    claim.save(update_fields=["status"])
    return None


def _claim_once(worker: Worker, dataset: Dataset | None, study_session: StudySession | None) -> WritingClaim | None:
    """The worker's open claim, or a claim on the first claimable premise with room (`crowd.claiming`).

    Candidates are locked one at a time, skipping those another claimer holds. When every candidate
    is locked by someone claiming or submitting right now, those may still leave room
    (writings_per_premise > 1, or a claim that fails), so the next look waits for one rather than
    say "no tasks" while work is left.

    Each step (a lock and its take, `_lock_and_take`) is one call and, outside a caller's
    transaction, a transaction of its own: a claim is two round trips in all (the first read and
    one step), and nothing it locks is held between its steps. Inside a caller's transaction the
    steps run in a savepoint, so a claim that fails leaves the caller's work as it was.
    """
    now = timezone.now()
    study = study_session.study if study_session is not None else None
    first = _first_read(worker, dataset, study, now)
    if first.excluded:
        raise NotAllowedToWrite(NOT_TAKING_PART)
    if first.own is not None:
        return first.own
    serving = serving_of(study, (first.pool, first.served))
    with transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext():
        wait = {"for locked": False}
        made: dict[int, WritingClaim] = {}

        def lock(wanted: int, tried: Sequence[int]) -> list[int]:
            # A balanced study's least-served group first, the whole pool last (a group run dry),
            # unless the groups are the whole pool.
            groups = _dry_groups_last(dataset, serving.groups)
            pools = groups if serving.groups_cover_pool else (*groups, serving.pool)
            for pool in pools:
                candidate = _candidate(
                    worker,
                    now,
                    dataset=dataset,
                    pool=pool,
                    tried=tried,
                    wanted=wanted,
                    wait=wait["for locked"],
                    shuffle_seed=serving.shuffle_seed,
                )
                locked, claim = _lock_and_take(worker, now, study_session, candidate)
                if locked is not None:
                    if claim is not None:
                        made[locked] = claim
                    return [locked]
                if pool is not serving.pool and not tried:
                    _dry_groups[_group_key(dataset, pool)] = time.monotonic() + DRY_GROUP_SECONDS
            return []

        def take(locked: list[int], tried: list[int]) -> list[TaskClaim]:
            # The step that locked the premise took it already, if it had room.
            return [made[pk] for pk in locked if pk in made]

        def look_again(tried: list[int]) -> bool:
            if wait["for locked"]:
                return False
            wait["for locked"] = True
            return True

        claims = claim_rows(
            WRITING_CLAIMS,
            worker,
            now,
            lock,
            size=1,
            wanted=1,
            looks=MAX_CANDIDATES_PER_CLAIM,
            look_again=look_again,
            take=take,
        )
        if claims:
            claim = claims[0]
            assert isinstance(claim, WritingClaim)
            return claim
        # The same worker may have won the last premise in another tab meanwhile.
        return _own_open_claim(worker, now)


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
