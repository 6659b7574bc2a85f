"""Rounds (ANLI §2.2): closing one snapshots its data, trains the next target on everything so far
(a run on the `gpu` queue), and opens the next round on the new checkpoint. `close_round` starts it
in one transaction; `advance_round` moves a closing round one step a call, safe to call any number
of times from anywhere. A failed snapshot or run goes to `Round.error` and the round waits for a person.
"""

import logging
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.utils import timezone

from audit import services as audit
from base import outbound
from base.long_tasks import JobStatus
from base.task_queue import enqueue
from corpus.models import Dataset, Split
from modeling.models import RunStatus
from modeling.snapshots.services import request_snapshot
from modeling.training.services import LaunchRefused, launch_training_run

from . import targets
from .models import AdversarialTry, Round, RoundStatus, Verification

logger = logging.getLogger(__name__)

ADVANCE_TASK = "adversarial.advance_rounds"
ADVANCED = "adversarial.round_advanced"  # the audit log's action of a step


class RoundRefused(Exception):
    """A round that cannot be closed or opened now; the message says why."""


class UnverifiedFooled(RoundRefused):
    """A round asked to close while fooled examples still wait for their verifiers, unconfirmed."""

    def __init__(self, round_, pending):
        self.pending = pending
        super().__init__(
            f"Round {round_.number} has {pending} fooled example(s) still waiting for verifiers. Its snapshots "
            "are taken when it closes, so those examples enter neither as verified: not in this round's test set "
            "nor in the next target's training data as verified. Wait for the verifiers, or confirm to close now."
        )


def unverified_fooled(round_):
    """How many of the round's fooled examples still wait for their verifiers."""
    return AdversarialTry.objects.filter(round=round_, model_fooled=True, verification=Verification.PENDING).count()


def training_datasets(round_):
    """Dataset slugs the next target trains on: the first target's own data and every round's so far
    ([] means every dataset, as a snapshot reads it)."""
    rounds = list(Round.objects.filter(study=round_.study, number__lte=round_.number).select_related("dataset"))
    first = min(rounds, key=lambda r: r.number)
    slugs = {r.dataset.slug for r in rounds}
    if first.target_run is not None:
        base = first.target_run.snapshot.datasets
        if not base:
            return []
        slugs |= set(base)
    return sorted(slugs)


def close_round(
    round_: Round,
    user: User | AnonymousUser | None = None,
    next_dataset: Dataset | None = None,
    next_model: str | None = None,
    next_config: dict[str, Any] | str | None = None,
    *,
    confirm_unverified: bool = False,
) -> Round:
    """Close an open round: its snapshot and the training snapshot are requested; the rest follows in
    `advance_round`. Raises RoundRefused for a round that is not open, and UnverifiedFooled for one
    whose fooled examples still wait for verifiers unless `confirm_unverified` (the researcher saw
    how many and closes anyway)."""
    with transaction.atomic():
        round_ = (
            Round.objects.select_for_update(of=("self",))
            .select_related("target_run__snapshot", "study", "dataset")
            .get(pk=round_.pk)
        )
        if round_.status != RoundStatus.OPEN:
            raise RoundRefused(f"Round {round_.number} is {round_.status}, not open.")
        pending = unverified_fooled(round_)
        if pending and not confirm_unverified:
            raise UnverifiedFooled(round_, pending)
        round_.round_snapshot = request_snapshot(user, datasets=[round_.dataset.slug])
        round_.training_snapshot = request_snapshot(user, datasets=training_datasets(round_))
        round_.status = RoundStatus.CLOSING
        round_.closed_at = timezone.now()
        round_.next_dataset = next_dataset or round_.next_dataset
        if next_model:
            round_.next_model = next_model
        if next_config is not None:
            round_.next_config = next_config
        round_.save()
        after = {
            "round_snapshot": round_.round_snapshot.pk,
            "training_snapshot": round_.training_snapshot.pk,
            "next_dataset": round_.next_dataset.slug if round_.next_dataset else None,
            "next_model": round_.next_model,
            "unverified_fooled": pending,
        }
        _record("adversarial.round_closed", round_, user, after)
        transaction.on_commit(lambda: enqueue(ADVANCE_TASK))
    return round_


def advance_round(round_: Round, user: User | AnonymousUser | None = None) -> Round:
    """One step for a closing round; returns the round as it now stands (a new open round when done)."""
    with transaction.atomic():
        round_ = (
            Round.objects.select_for_update(of=("self",))
            .select_related("round_snapshot", "training_snapshot", "next_run", "study", "dataset")
            .get(pk=round_.pk)
        )
        if round_.status != RoundStatus.CLOSING:
            return round_
        training_snapshot = round_.training_snapshot
        if round_.round_snapshot is None or training_snapshot is None:
            raise ValueError(f"round {round_.pk} is closing without its snapshots")
        for snapshot in (round_.round_snapshot, training_snapshot):
            if snapshot.status == JobStatus.FAILED:
                return _stuck(round_, f"snapshot {snapshot.pk} failed: {snapshot.error}")
            if snapshot.status != JobStatus.DONE:
                return round_
        if round_.next_run is None:
            try:
                round_.next_run = launch_training_run(
                    training_snapshot, round_.next_model, config=round_.next_config, user=user
                )
            except LaunchRefused as refused:
                return _stuck(round_, f"the next target cannot be trained: {refused.message_dict}")
            round_.error = ""
            round_.save(update_fields=["next_run", "error"])
            _record(ADVANCED, round_, user, {"step": "next target training", "training_run": round_.next_run.pk})
            return round_
        run = round_.next_run
        if run.status == RunStatus.FAILED:
            return _stuck(round_, f"training run {run.pk} failed: {run.error}")
        if run.status != RunStatus.DONE:
            return round_
        try:
            accuracy, n = test_accuracy(round_, run)
        except targets.TargetUnavailable as unavailable:  # e.g. a checkpoint refused as not loadable
            return _stuck(round_, getattr(unavailable, "detail", str(unavailable)))
        round_.next_test_accuracy, round_.next_test_examples = accuracy, n
        round_.status = RoundStatus.CLOSED
        round_.error = ""
        round_.save(update_fields=["next_test_accuracy", "next_test_examples", "status", "error"])
        opened = Round.objects.create(
            study=round_.study,
            number=round_.number + 1,
            dataset=round_.next_dataset or round_.dataset,
            target_run=run,
            next_model=round_.next_model,
            next_config=round_.next_config,
        )
        _record(
            ADVANCED,
            round_,
            user,
            {
                "step": "closed, next round opened",
                "next_round": opened.number,
                "target_run": run.pk,
                "test_accuracy": accuracy,
                "test_examples": n,
            },
            datasets=[round_.dataset.slug, opened.dataset.slug],
        )
        return opened


def _record(action: str, round_: Round, user: Any, after: dict[str, Any], datasets: list[str] | None = None) -> None:
    """The round's step in its study's team's audit log, in the step's transaction: by the
    researcher who pressed the button, or by nobody (None) when the beat moved it. Only steps
    that changed something: the beat asks every minute, and a waiting round changes nothing."""
    audit.record(
        action,
        actor=user,
        subject=round_,
        subject_label=f"{round_.study.slug} round {round_.number}",
        team_id=round_.study.team_id,
        after=after,
        datasets=datasets or [round_.dataset.slug],
    )


def _stuck(round_, error):
    round_.error = error
    round_.save(update_fields=["error"])
    logger.warning("round %s waits: %s", round_.pk, error)
    return round_


def advance_all() -> list[Round]:
    """Every closing round one step further (the beat task)."""
    return [advance_round(r) for r in Round.objects.filter(status=RoundStatus.CLOSING).order_by("pk")]


def test_examples(round_):
    """The round's test set as ANLI's: verified fooled examples on test premises (premise, hypothesis, label)."""
    return [
        (t.task.writing_claim.premise.text, t.hypothesis, t.task.target_label)
        for t in AdversarialTry.objects.filter(
            round=round_,
            model_fooled=True,
            verification=Verification.VERIFIED,
            task__writing_claim__premise__split=Split.TEST,
        )
        .select_related("task__writing_claim__premise")
        .order_by("pk")
    ]


def test_accuracy(round_, run):
    """(accuracy, n) of the run's checkpoint on this round's test set; (None, 0) when it is empty."""
    examples = test_examples(round_)
    if not examples:
        return None, 0
    model = targets.load_run_model(run)
    rows = targets.model_probabilities(model, [(p, h) for p, h, _ in examples])
    correct = sum(targets.predicted(row) == label for row, (_, _, label) in zip(rows, examples, strict=True))
    return round(correct / len(examples), 6), len(examples)


def open_first_round(study, dataset, target_run=None, target_endpoint="", next_model="esim", next_config=None):
    """Round 1 of an adversarial study; RoundRefused when a round is open or the target cannot serve."""
    if Round.objects.filter(study=study, status__in=[RoundStatus.OPEN, RoundStatus.CLOSING]).exists():
        raise RoundRefused("This study has a round open (or closing) already.")
    if target_run is not None and (target_run.status != RunStatus.DONE or not target_run.checkpoint_sha256):
        raise RoundRefused(f"Training run {target_run.pk} has no finished, verified checkpoint.")
    if (target_run is None) == (not target_endpoint):
        raise RoundRefused("Name one target: a finished training run or an endpoint URL.")
    if target_endpoint:
        try:
            outbound.check_url(target_endpoint)
        except outbound.RefusedDestination as refused:
            raise RoundRefused(f"The endpoint cannot be used: {refused}") from refused
    number = (Round.objects.filter(study=study).order_by("-number").values_list("number", flat=True).first() or 0) + 1
    return Round.objects.create(
        study=study,
        number=number,
        dataset=dataset,
        target_run=target_run,
        target_endpoint=target_endpoint,
        next_model=next_model,
        next_config=next_config or {},
    )
