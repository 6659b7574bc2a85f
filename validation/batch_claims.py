"""Claiming batches for validation: five pairs a batch (catch trials among them), MPE batches, backup
claims, and the refusals every batch task's submit shares (`claims_to_submit`). A claim locks the
pair rows it counts, so the places it takes are counted under the lock.
"""

import itertools
import random
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from corpus.models import LABELS_PER_PAIR, Dataset, ItemKind, Pair, Worker
from corpus.services import LabelRefused
from crowd.claiming import (
    ClaimRule,
    Grouping,
    RoomRule,
    choose,
    claim_batch,
    claim_key,
    db_time,
    insert_claims,
    live_params,
    lock_rows,
    marks,
)
from crowd.holds import has_run_out
from crowd.models import ClaimStatus, StudySession, TaskClaim
from crowd.selectors import pool_limits
from quality.catch_trials import catch_trials_per_batch, pick_catch_trials

from . import claim_order, selectors
from .backup_claims import pick_backup_pairs
from .models import SessionServed, ValidationClaim


class ValidationRefused(LabelRefused):
    """A validation write that was refused; its message is fit to show the worker."""


class NotAllowedToValidate(ValidationRefused):
    pass


class BatchNotFound(ValidationRefused):
    pass


class BatchExpired(ValidationRefused):
    pass


class BatchAlreadySubmitted(ValidationRefused):
    pass


class BatchIncomplete(ValidationRefused):
    def __init__(self, message: str, missing: list[int]) -> None:
        super().__init__(message)
        self.missing = missing


CLAIM_WAITS = 8  # looks again after 20, 40, ..., 160 ms when every claimable pair is locked
CLAIM_WAIT_SECONDS = 0.02


def _claimable_locker(
    worker: Worker,
    now: datetime,
    dataset: Dataset | None,
    item_kind: str,
    facts: dict[int, tuple[int, int]],
    fresh: dict[str, bool],
    study_session: StudySession | None,
) -> Callable[[int, Sequence[int]], list[int]]:
    """Locks up to `wanted` claimable pairs, leaving out those `tried` (claim_batch's candidates).
    `facts` gets each locked pair's (premise pk, label count); `fresh["premises"]`: offer only
    premises the worker was never served (the caller turns it off when none is left). A study's pool
    limits them and its preference orders them (read at the first lock)."""
    pool: list[tuple[list[int], list[str]]] = []
    prefer: list[claim_order.Preference | None] = []

    def lock(wanted: int, tried: Sequence[int]) -> list[int]:
        if not pool:
            pool.append(pool_limits(study_session.study) if study_session else ([], []))
            prefer.append(claim_order.preference_for(study_session.study) if study_session else None)
        sql, params = selectors.candidate_statement(
            worker,
            now,
            dataset=dataset,
            item_kind=item_kind,
            fresh_premises=fresh["premises"],
            pool=pool[0],
            tried=tried,
            limit=wanted,
            lock=True,
            prefer=prefer[0],
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        facts.update({pk: (premise, count) for pk, premise, count in rows})
        return [pk for pk, *_ in rows]

    return lock


def spread_over_premises(
    candidate_ids: Sequence[int], facts: Mapping[int, tuple[int, int]], *, leave_out: Iterable[int] = ()
) -> list[int]:
    """The candidates in the order a batch takes them: first one pair of each premise (premises in
    the candidates' order), then the other pairs of those premises, and last the pairs of the
    premises `leave_out` (the batch's catch trials'), so a claim never comes back empty while a
    candidate has room.

    A premise's three pairs, served together, give their labels away, and a catch trial would be
    the lone premise among them. Of a premise's pairs the batch takes one of those closest to
    complete, at random: taking the first would put every premise's entailment pair in one batch.
    """
    left_out = set(leave_out)
    by_premise: dict[int, list[int]] = {}
    last: list[int] = []
    for pk in candidate_ids:
        premise = facts[pk][0]
        if premise in left_out:
            last.append(pk)
        else:
            by_premise.setdefault(premise, []).append(pk)
    first, rest = [], []
    for members in by_premise.values():
        closest = max(facts[pk][1] for pk in members)
        pick = _shuffler.choice([pk for pk in members if facts[pk][1] == closest])
        first.append(pick)
        rest += [pk for pk in members if pk != pick]
    return first + rest + last


def page_order(pks: Sequence[int], premise_of: Mapping[int, int], *, tries: int = 50) -> list[int]:
    """A random order of a batch's pairs with no two of one premise side by side (where there is one)."""
    order = list(pks)
    for _ in range(tries):
        _shuffler.shuffle(order)
        premises = [premise_of.get(pk, -pk) for pk in order]
        if all(a != b for a, b in itertools.pairwise(premises)):
            break
    return order


# The batch's order and its choice among a premise's pairs: drawn afresh for each batch, never from
# pks or the order pairs were written in.
_shuffler = random.SystemRandom()


def _pair_room(target: int) -> RoomRule:
    """A pair's free places: the target less its labels and live claims (catch trials hold none);
    its group is its label scheme, one per batch (the page shows one set of buttons and instructions)."""

    def room(locked: list[int], now: datetime) -> Iterable[tuple[int, int, object]]:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT collection_pair.id, collection_pair.label_count, {selectors.LIVE_CLAIMS_SQL}, d.label_scheme"
                " FROM collection_pair INNER JOIN collection_dataset d ON d.id = collection_pair.dataset_id"
                f" WHERE collection_pair.id IN ({marks(locked)})",
                [*live_params(now), *locked],
            )
            fresh = cursor.fetchall()
        return [(pk, target - count - held, scheme) for pk, count, held, scheme in fresh]

    return room


def recount_held(pairs: Sequence[int], now: datetime) -> int:
    """Set these (locked) pairs' `held_places` to their live claims; returns how many changed."""
    if not pairs:
        return 0
    live = selectors.LIVE_CLAIMS_SQL
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE collection_pair SET held_places = {live}"
            f" WHERE collection_pair.id IN ({marks(pairs)}) AND collection_pair.held_places <> {live}",
            [*live_params(now), *pairs, *live_params(now)],
        )
        changed: int = cursor.rowcount
    return changed


# Validation batches (and MPE judgments): the candidate query walks a partial index of the pairs with
# free places. After a look, the locked candidates' `held_places` are their live claims, the new ones
# included: a pair that live claims fill leaves the claim index until a place comes free.
VALIDATION_CLAIMS = ClaimRule(
    model=ValidationClaim,
    target="pair",
    room=_pair_room(LABELS_PER_PAIR),
    grouping=Grouping.SAME,
    after=lambda locked, claimed, now: recount_held(locked, now),
)


NOT_TAKING_PART = (
    "Your account is not taking part in validation at the moment. "
    "If you think this is a mistake, please contact the researchers."
)


def _standing(worker: Worker, dataset: Dataset) -> tuple[bool, bool]:
    """(whether the dataset's team excluded the worker, whether its validation is open to trusted
    workers only: `ValidationPolicy`), in one statement."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM corpus_workerexclusion x WHERE x.worker_id = %s AND x.team_id = %s), "
            "EXISTS (SELECT 1 FROM validation_validationpolicy WHERE dataset_id = %s AND trusted_only)",
            [worker.pk, dataset.team_id, dataset.pk],
        )
        excluded, trusted_only = cursor.fetchone()
    return bool(excluded), bool(trusted_only)


def _check_may_validate(worker: Worker, dataset: Dataset | None) -> None:
    # Without a dataset the candidates leave out the datasets of teams that excluded the worker.
    if dataset is None:
        return
    excluded, trusted_only = _standing(worker, dataset)
    if excluded:
        raise NotAllowedToValidate(NOT_TAKING_PART)
    if trusted_only and not worker.is_trusted:
        raise NotAllowedToValidate(
            "Validation of this data set is open only to our pool of trusted validators, "
            "and your account is not in it yet."
        )


def claim_validation_batch(
    worker: Worker,
    *,
    dataset: Dataset | None = None,
    study_session: StudySession | None = None,
    item_kind: str = ItemKind.SINGLE_PREMISE,
) -> uuid.UUID | None:
    """Give the worker a batch of up to five pairs of `item_kind` to label, or None when there is no
    work. A worker with a live batch gets it back. Otherwise pairs are picked closest to complete
    first, so gold labels accumulate instead of every pair waiting at two of five.
    """
    if dataset is None and study_session is not None:
        dataset = study_session.study.dataset
    _check_may_validate(worker, dataset)
    now = timezone.now()
    with transaction.atomic():
        size = selectors.BATCH_SIZE
        catch: list[int] | None = None
        catch_premises: dict[int, int] = {}
        facts: dict[int, tuple[int, int]] = {}
        fresh = {"premises": True}
        healed, waits = False, 0

        def take(candidate_ids: list[int], tried: list[int]) -> list[TaskClaim]:
            nonlocal catch
            if catch is None:
                catch = _catch_trials(
                    worker, study_session, dataset, size, taken=candidate_ids, premise_of=catch_premises
                )
            spread = spread_over_premises(candidate_ids, facts, leave_out=catch_premises.values())
            premise_of = {pk: fact[0] for pk, fact in facts.items()} | catch_premises
            claims = _take_candidates(worker, now, spread, catch, size, study_session, premise_of)
            if not claims:
                tried += catch  # and the candidates: every one was full
            return claims

        def look_again(tried: list[int]) -> bool:
            nonlocal healed, waits
            if fresh["premises"]:
                # Every premise left was served to this worker before: serve them again rather
                # than nothing (a small dataset, a closed pool of validators).
                fresh["premises"] = False
                return True
            if not healed:
                # Pairs left out of the claim index by a stale count of held places: recount.
                healed = True
                if _recount_every_held_pair(now):
                    return True
            pool = pool_limits(study_session.study) if study_session else ([], [])
            if waits < CLAIM_WAITS and selectors.claimable_pairs(
                worker, now, dataset=dataset, item_kind=item_kind, pool=pool, tried=tried, limit=1
            ):
                # Every claimable pair of the pool is locked by someone claiming or submitting right
                # now: they commit in a moment, so look again shortly instead of saying "no task".
                # Never waits on their locks: a submit that fills the pair may hold them.
                waits += 1
                time.sleep(CLAIM_WAIT_SECONDS * waits)
                return True
            return False

        # Over-fetch: a few candidates may turn out full once their rows are locked.
        batch = claim_batch(
            VALIDATION_CLAIMS,
            worker,
            now,
            _claimable_locker(worker, now, dataset, item_kind, facts, fresh, study_session),
            size=size,
            wanted=size * 3,
            take=take,
            look_again=look_again,
            open_batch=lambda: selectors.worker_open_batch(worker, now, item_kind=item_kind),
        )
        if batch is None and study_session is not None:
            # Every open pair is held: pairs whose claims no longer hold their place against an
            # arrival (older than a claim period, or by an id that let a claim run out) are served
            # again; the first sends count (`backup_claims`).
            backups = _claim_backups(worker, study_session, now, size=size)
            batch = backups[0].batch if backups else None
        return batch


def _claim_backups(worker: Worker, study_session: StudySession, now: datetime, *, size: int) -> list[Any]:
    """Claims on the pairs `backup_claims.pick_backup_pairs` picks, in page order; the locked pairs'
    held places recounted."""
    chosen, locked = pick_backup_pairs(worker, study_session, now, size=size)
    if not chosen:
        return []
    items: list[tuple[int, dict[str, Any]]] = [(pk, {}) for pk in page_order(list(chosen), chosen)]
    claims = _insert_batch(worker, now, items, study_session)
    recount_held(locked, now)
    return claims


def _take_candidates(
    worker: Worker,
    now: datetime,
    candidate_ids: list[int],
    catch: list[int],
    size: int,
    study_session: StudySession | None,
    premise_of: Mapping[int, int],
) -> list[TaskClaim]:
    """Claims on the first of the locked candidates that still have room, as many as the catch
    trials leave of `size`, and on the catch trials, in random order; none when every candidate is
    full. A batch with catch trials and one without take the same statements: a slower claim would
    tell them apart."""
    # Lazily mark what has expired, the worker's own and on the candidates (both reached by an
    # index): this keeps the status honest. Every other expired claim is the beat's: a sweep of the
    # whole claim table on every claim would grow with the study's history.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE validation_validationclaim SET status = %s WHERE status = %s AND expires_at <= %s"
            f" AND (worker_id = %s OR pair_id IN ({marks(candidate_ids)}))",
            [ClaimStatus.EXPIRED, ClaimStatus.OPEN, db_time(now), worker.pk, *candidate_ids],
        )
    # The candidate query saw claims as of its start; another claimer may have committed claims on
    # these pairs just before we locked them: `choose` counts again under the locks.
    ordinary = choose(VALIDATION_CLAIMS, candidate_ids, now, size=size - len(catch))
    if not ordinary:
        # Never a batch of catch trials alone: they ride along with real work.
        return []
    # The page shows a batch in claim id order: the claims go in shuffled, catch trials among them.
    items = [(pk, {"is_catch_trial": pk in catch}) for pk in page_order(ordinary + catch, premise_of)]
    return _insert_batch(worker, now, items, study_session)


def _insert_batch(
    worker: Worker, now: datetime, items: list[tuple[int, dict[str, Any]]], study_session: StudySession | None
) -> list[TaskClaim]:
    """A validation batch's claims, ordinary and backup batches alike: the only door by which a
    claim of a study session is made, so the session's served counts (`_count_served`) never miss
    a batch."""
    claims = insert_claims(VALIDATION_CLAIMS, worker, now, items, study_session=study_session)
    if claims:
        _count_served(study_session, sum(1 for _, fields in items if fields.get("is_catch_trial")))
    return claims


def _count_served(study_session: StudySession | None, catch_trials: int) -> None:
    """One more batch (with `catch_trials` catch trials) for the session, where its study keeps a
    catch share: a study owes catch trials for the batches served since it kept a share. A preview
    leaves no row: a preview changes no figure."""
    if study_session is None or study_session.is_preview or study_session.study.catch_trial_share <= 0:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {SessionServed._meta.db_table} (study_session_id, batches, catch_trials) VALUES (%s, 1, %s)"
            " ON CONFLICT (study_session_id) DO UPDATE SET batches = "
            f"{SessionServed._meta.db_table}.batches + 1, catch_trials = {SessionServed._meta.db_table}.catch_trials"
            " + EXCLUDED.catch_trials",
            [study_session.pk, catch_trials],
        )


def _recount_every_held_pair(now: datetime) -> int:
    """Recount every pair marked held that we can lock (claims released without the beat, or run
    out since it last ran), so that a pair never stays out of the claim index while it has room."""
    live = Coalesce(selectors.open_claims_subquery(now), Value(0))
    stale = Pair.objects.filter(held_places__gt=0).alias(live=live).exclude(held_places=F("live"))
    held = list(lock_rows(stale).values_list("pk", flat=True))
    return recount_held(held, now)


def claim_mpe_batch(worker: Worker, *, study_session: StudySession | None = None) -> uuid.UUID | None:
    """A batch of up to five multi-premise items (the MPE judgment task), or None when there is no
    work; inside an MPE study (`study_session`), of that study's dataset only.

    Claimed one multi-premise dataset at a time (there are few), so the candidate query walks that
    dataset's part of the claim index instead of every queued MultiNLI pair. A dataset open to
    trusted workers only is skipped for others.
    """
    if study_session is not None:
        return claim_validation_batch(worker, study_session=study_session, item_kind=ItemKind.MULTI_PREMISE)
    _check_may_validate(worker, None)
    for dataset in Dataset.objects.filter(item_kind=ItemKind.MULTI_PREMISE).order_by("pk"):
        try:
            batch = claim_validation_batch(worker, dataset=dataset, item_kind=ItemKind.MULTI_PREMISE)
        except NotAllowedToValidate:
            continue  # trusted workers only
        if batch is not None:
            return batch
    return None


# The chance draws of catch trials (`quality.catch_trials.pick_catch_trials`): a new catch premise
# is opened when a draw falls under its chance.
catch_draw: Callable[[], float] = random.random
# Whether a batch that may take a pair of an open catch premise takes one (under
# `quality.catch_trials.KEEP_CHANCE`), so that the premise misses batches as ordinary ones do.
catch_keep_draw: Callable[[], float] = random.random


def _catch_trials(
    worker: Worker,
    study_session: StudySession | None,
    dataset: Dataset | None,
    size: int,
    *,
    taken: Sequence[int] = (),
    premise_of: dict[int, int] | None = None,
) -> list[int]:
    """Pair pks to serve as catch trials in this batch (the study's share on average; none outside a
    study), picked by the quality app; never a pair the worker was served before. `premise_of` gets
    the picked pairs' premises. Every claim takes the same statements whether the batch gets a catch
    trial or not: a `/validate/next/` slower when it did would give the catch trial away.
    """
    if study_session is None or study_session.study.catch_trial_share <= 0:
        return []
    # At least one ordinary pair in every batch.
    most = size - 1
    seen = ValidationClaim.objects.filter(worker=worker).values("pair_id")
    drawn: dict[int, int] = {}
    picked = pick_catch_trials(
        worker=worker,
        dataset=dataset,
        most=most,
        per_batch=catch_trials_per_batch(study_session.study.catch_trial_share, size),
        seen=seen,
        taken=list(taken),
        claims=ValidationClaim.objects.all(),
        premise_of=drawn,
        draw=catch_draw,
        study_served=selectors.study_served(study_session.study_id),
        keep_draw=catch_keep_draw,
    )
    kept = [pk for pk in dict.fromkeys(picked) if pk not in taken]
    if premise_of is not None:
        premise_of.update({pk: drawn[pk] for pk in kept})
    return kept


def claims_to_submit(
    rule: ClaimRule, worker: Worker, batch: uuid.UUID | str, now: datetime, *related: str, others: str
) -> list[Any]:
    """The worker's claims in `batch` (with `related`), locked, in page order, for its submit, in the
    caller's transaction (the worker's row locked already). Refused when the batch is not theirs, was
    submitted already, or ran out (its items went back to `others`)."""
    batch_id = claim_key(batch)
    model: Any = rule.model  # a concrete claim model (the rule names the abstract TaskClaim)
    claims = (
        []
        if batch_id is None
        else list(
            model._default_manager.select_for_update(of=("self",))
            .filter(worker=worker, batch=batch_id)
            .select_related(*related)
            .order_by("id")
        )
    )
    if not claims:
        raise BatchNotFound("This batch does not exist or is not yours.")
    if all(claim.status == ClaimStatus.SUBMITTED for claim in claims):
        raise BatchAlreadySubmitted("These labels are already saved. Thank you!")
    if has_run_out(claims, now):
        raise BatchExpired(
            f"This batch expired before it was submitted, so its pairs went back to other {others} "
            "and nothing was saved. Please take a new batch."
        )
    return claims
