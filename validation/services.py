"""Writes for validation: submitting a batch's labels, and marking which pairs need validation.
Claiming a batch is `batch_claims`.

Every pair ends with at most the author's label plus four validation labels (MultiNLI §2.1, SNLI
§2.2): fewer where its stopping rule stops it early (docs/quality.md). Three things keep the bound
under concurrency: claims lock the pair rows they count (FOR UPDATE SKIP LOCKED), the label insert
re-checks the count under the pair's row lock, and the unique constraints on (pair, position) and
(pair, worker) refuse whatever slips past both.
"""

import contextlib
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit import services as audit
from corpus import tallies
from corpus.labels import to_stored
from corpus.models import Dataset, Pair, Split, ValidationLabel, Worker
from corpus.services import WorkerExcluded, add_labels, set_needs_validation
from corpus.stopping_policies import record_stopping_rules
from corpus.validation_flags import set_validation_flags
from crowd.claiming import FOREIGN_ITEMS_MESSAGE, foreign_items
from crowd.models import ClaimStatus, StudySession
from crowd.services import record_task_done
from quality.catch_trials import score_catch_trials

from . import cost_tally, credits
from .batch_claims import (
    NOT_TAKING_PART,
    VALIDATION_CLAIMS,
    BatchIncomplete,
    NotAllowedToValidate,
    ValidationRefused,
    claims_to_submit,
    recount_held,
)
from .models import ValidationClaim
from .signals import validation_labels_added


@dataclass
class SubmittedBatch:
    batch: uuid.UUID | str
    labels: list[ValidationLabel]
    study_session: StudySession | None = None


# What a submit reads of each claim besides the claim itself.
_SUBMIT_READS = ("pair", "pair__dataset", "pair__premise", "study_session__study")


def submit_validation_batch(
    worker: Worker, batch: uuid.UUID | str, labels: Mapping[Any, Any], *, seconds: float | None = None
) -> SubmittedBatch:
    """Save a worker's labels for a whole batch, or nothing: `labels` maps pair pk -> answer in the
    pair's label scheme (mapped to core labels by corpus.labels.to_stored). Refused when the batch is
    not the worker's, has expired, was already submitted, or lacks a label."""
    now = timezone.now()
    labels = {int(pk): value for pk, value in labels.items() if value}
    with transaction.atomic():
        worker = Worker.objects.select_for_update(no_key=True).get(pk=worker.pk)
        # The pairs are locked next, in pk order, by `add_labels`, as every writer of labels does.
        claims = claims_to_submit(VALIDATION_CLAIMS, worker, batch, now, *_SUBMIT_READS, others="validators")
        stored = {}
        for claim in claims:
            with contextlib.suppress(ValueError):  # named as missing below
                stored[claim.pair_id] = to_stored(claim.pair.dataset.label_scheme, labels.get(claim.pair_id))
        missing = [claim.pair for claim in claims if claim.pair_id not in stored]
        if missing:
            numbers = [str(index) for index, claim in enumerate(claims, 1) if claim.pair in missing]
            raise BatchIncomplete(
                f"Please choose a label for every pair; missing: pair {', '.join(numbers)}. Nothing was saved yet.",
                missing=[pair.pk for pair in missing],
            )
        if foreign_items(labels, [claim.pair_id for claim in claims]):
            raise ValidationRefused(FOREIGN_ITEMS_MESSAGE)
        if seconds is None:
            seconds = (now - min(claim.created_at for claim in claims)).total_seconds()
        per_pair = seconds / len(claims) if seconds is not None else None
        ordinary = [claim for claim in claims if not claim.is_catch_trial]
        study_session = claims[0].study_session
        # Read after the worker's lock, which the market's answer takes too (markets.identity): a
        # session vouched for meanwhile is seen so, and labels of one not yet vouched for wait.
        waits_for = study_session.pk if study_session is not None and study_session.labels_await_market else None
        # The cost page's tallies move with the credit (below), from the keys the labels leave.
        try:
            with cost_tally.submit_moves(claim.pair_id for claim in ordinary) as old_keys:
                saved = add_labels(
                    [(claim.pair, *stored[claim.pair_id]) for claim in ordinary],
                    worker=worker,
                    seconds=per_pair,
                    releasing_places=True,
                    awaiting_market_session=waits_for,
                    # A pair that has its five labels by now (a backup claimer sent first,
                    # `backup_claims`) keeps nothing of this batch; the rest is saved and the batch
                    # counts as done.
                    first_sends_count=True,
                )
        except WorkerExcluded:  # by the team while the batch was theirs: refused under the pairs' locks
            raise NotAllowedToValidate(NOT_TAKING_PART) from None
        # The claims' UPDATE also moves the credit of their pairs (for the cost page) to this batch.
        earlier = credits.submitted(claims, now)
        _cost_tallies_moved(ordinary, earlier, old_keys)
        validation_labels_added.send(sender=ValidationClaim, pair_ids=[label.pair_id for label in saved])
        # In the core's labels, as the reference label is (a recast catch trial's "entailed" is "entailment").
        catch_labels = {claim.pair_id: stored[claim.pair_id][0] for claim in claims if claim.is_catch_trial}
        if catch_labels:
            # Scored by the quality app, in this transaction: a catch-trial label never touches
            # the pair's labels or counters.
            score_catch_trials(
                worker=worker, study_session=study_session, batch=batch, catch_labels=catch_labels, seconds=per_pair
            )
        record_task_done(study_session)
    return SubmittedBatch(batch=batch, labels=saved, study_session=study_session)


def _cost_tallies_moved(
    ordinary: Sequence[ValidationClaim], earlier: Mapping[int, int], old_keys: Mapping[int, tallies.Key]
) -> None:
    """The cost page's tallies of a submit (`validation.cost_tally`): its claims in a study session
    are labels bought and take their pairs' credit (`earlier`: the study that held it, as
    `credits.submitted` read it); a claim outside any leaves the credit where it was. Each pair's
    row moves from its key before the labels (`old_keys`, where they moved it) to its key now."""
    bought, credit = [], []
    for claim in ordinary:
        pair = claim.pair
        new_key = tallies.pair_key(pair, pair.premise.split, pair.premise.genre_id)
        old_study = earlier.get(claim.pair_id)
        new_study = old_study
        if claim.study_session is not None:
            new_study = claim.study_session.study_id
            bought.append((new_study, new_key))
        credit.append((old_study, new_study, old_keys.get(claim.pair_id, new_key), new_key))
    cost_tally.submitted(bought, credit)


def release_expired_claims(*, now: datetime | None = None) -> int:
    """Mark every open claim past its expiry as expired and recount its pair's held places.

    The beat's, not a claim's: a sweep on every claim would read the claim table, which grows with
    every batch ever submitted; this statement reads the partial index of open claims. Meanwhile a
    pair whose claims ran out waits outside the claim index with its stale count, unless a claim
    finds no free pair and recounts every held pair (`_recount_every_held_pair`)."""
    now = now or timezone.now()
    with transaction.atomic():
        expired = ValidationClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__lte=now)
        pairs = Pair.objects.filter(pk__in=list(expired.order_by().values_list("pair_id", flat=True).distinct()))
        # Locked in pk order, as every writer of pairs locks them.
        locked = list(pairs.select_for_update(no_key=True).order_by("pk").values_list("pk", flat=True))
        released = expired.filter(pair_id__in=locked).update(status=ClaimStatus.EXPIRED)
        recount_held(locked, now)
    return released


# --- which pairs need validation ---------------------------------------------------------------


def mark_for_validation(pairs: QuerySet[Pair]) -> int:
    """Ask for validation labels on these pairs, under their split's stopping rule (recorded on
    each pair: `corpus.stopping_policies.record_stopping_rules`; four labels under the fixed rule, the
    default). Returns how many were newly marked."""
    with transaction.atomic():
        marked: int = set_needs_validation(pairs, True)
        record_stopping_rules(pairs)
    return marked


def sample_train_for_validation(
    dataset: Dataset, fraction: float, *, seed: int = 0, progress: bool = False
) -> dict[str, int]:
    """Mark a reproducible random share of the dataset's train pairs for validation. The share counts
    pairs already marked: the same fraction again adds nothing, a larger one tops the sample up."""
    if not 0.0 <= fraction <= 1.0:
        raise ValidationRefused(f"The train fraction must be between 0 and 1, not {fraction}.")
    train = Pair.objects.filter(dataset=dataset, premise__split=Split.TRAIN)
    total = train.count()
    wanted = round(total * fraction)
    already = train.filter(needs_validation=True).count()
    unmarked = list(train.filter(needs_validation=False).order_by("pk").values_list("pk", flat=True))
    chosen = random.Random(seed).sample(unmarked, max(0, min(len(unmarked), wanted - already)))
    chunks = [chosen[start : start + 1000] for start in range(0, len(chosen), 1000)]
    if progress:
        from tqdm import tqdm

        chunks = tqdm(chunks, desc="marking train pairs", unit="chunk")
    with transaction.atomic():
        dataset.train_validation_fraction = fraction
        dataset.save(update_fields=["train_validation_fraction"])
        for chunk in chunks:
            set_validation_flags(Pair.objects.filter(pk__in=chunk), needs_validation=True)
        record_stopping_rules(train.filter(needs_validation=True))
    return {"train_pairs": total, "wanted": wanted, "already_marked": already, "newly_marked": len(chosen)}


def mark_dataset_for_validation(
    dataset: Dataset,
    *,
    fraction: float | None = None,
    count: int | None = None,
    seed: int = 0,
    dev_test: bool = True,
    actor: Any = None,
) -> dict[str, int]:
    """`manage.py mark_for_validation` from the dashboard: dev and test pairs (unless `dev_test` is
    false) and a share of train pairs (a `fraction` of every train pair, or `count` more), in one
    transaction with its audit entry. The counts of `sample_train_for_validation`, with `dev_test`
    (dev/test pairs newly marked) and `share_pct`."""
    train = Pair.objects.filter(dataset=dataset, premise__split=Split.TRAIN)
    if count is not None:
        if count < 0:
            raise ValidationRefused(f"The number of train pairs to add is 0 or more, not {count}.")
        total = train.count()
        already = train.filter(needs_validation=True).count()
        fraction = min(1.0, (already + count) / total) if total else 0.0
    if fraction is None:
        fraction = dataset.train_validation_fraction
    if not 0.0 <= fraction <= 1.0:
        raise ValidationRefused(f"The train share must be between 0 and 1 (0–100 %), not {fraction}.")
    was = dataset.train_validation_fraction
    with transaction.atomic():
        marked_dev_test = mark_dev_test_for_validation(dataset) if dev_test else 0
        report = sample_train_for_validation(dataset, fraction, seed=seed)
        audit.record(
            "validation.marked",
            actor=actor,
            subject=dataset,
            team_id=dataset.team_id,
            before={"train_validation_fraction": was},
            after={
                "train_validation_fraction": fraction,
                "train_newly_marked": report["newly_marked"],
                "dev_test_newly_marked": marked_dev_test,
                "seed": seed,
            },
            datasets=[dataset.slug],
        )
    return {**report, "dev_test": marked_dev_test, "share_pct": round(100 * fraction)}


def mark_dev_test_for_validation(dataset: Dataset) -> int:
    """Dev and test pairs always get validation labels (MultiNLI §2.1): four under the fixed rule,
    their default, unless a researcher chose another rule for the split (`StoppingPolicy`)."""
    return mark_for_validation(Pair.objects.filter(dataset=dataset, premise__split__in=[Split.DEV, Split.TEST]))
