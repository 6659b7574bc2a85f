"""Qualification tests: who has passed, how many tries are left, drawing a try and scoring it
(docs/quality.md, "Qualification and study access" and "What qualification trusts").

A study with access 'qualified' admits a worker once they reach the test's pass mark. A try asks
`items_per_try` items drawn from a pool at least `POOL_PER_TRY` times as large; the draw is stored
(`QualificationDraw`), so a reload shows the same items, and its answer fields are named by tokens
of that draw: a submit naming another try's fields is refused whole. Tries (`max_attempts`) are
counted per id and per browser alike (every id seen in one browser shares them), saved whole under
the test's row lock; each draws items this id and browser were not shown (`draw_fresh`) and says
pass or fail only. A fresh browser per throwaway id escapes both budgets, so a pass makes a worker
trusted only where the study's ids are verified (`grants_trust`). The check that admits workers
is registered with crowd (`crowd.access`, see apps.py): crowd, below this app, never imports it.
"""

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from corpus.models import Label, Worker
from crowd.access import Refusal
from crowd.arrival import ids_verified
from crowd.models import DeviceSighting, Study, StudyAccess, StudySession
from crowd.registry import market_confirms

from .models import (
    POOL_PER_TRY,
    QualificationAnswer,
    QualificationAttempt,
    QualificationDraw,
    QualificationDrawItem,
    QualificationTest,
    ReferenceLabel,
)

LABELS = {Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value}
NOT_READY_MESSAGE = (
    "Thank you for your interest. This study asks for a qualification test that is not ready yet. "
    "Please return the study on the crowd platform; you will not be penalised."
)
OTHER_TRY_MESSAGE = (
    "These answers belong to another try of the test (an older page, another tab or another participant), "
    "so they were not taken and nothing was saved. Please answer the pairs shown below."
)
_RANDOM = secrets.SystemRandom()


class QualificationRefused(Exception):
    """A try that cannot be taken or saved; the message is fit to show the worker."""

    def __init__(self, message: str, missing: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.missing = list(missing)


def pool_problem(pool_size: int, items_per_try: int) -> str | None:
    """Why a pool of `pool_size` items cannot serve tries of `items_per_try`, or None when it can."""
    wanted = POOL_PER_TRY * items_per_try
    if pool_size >= wanted:
        return None
    return (
        f"The pool holds {pool_size} item{'s' if pool_size != 1 else ''}; a try of {items_per_try} needs a pool of at "
        f"least {wanted} ({POOL_PER_TRY} times the try), so that each try draws its own items and answers learnt on "
        "one participant id are not the next id's test. Add items or ask fewer per try."
    )


def is_ready(test: QualificationTest) -> bool:
    """Whether the test can be taken: a pool large enough for its tries."""
    pool = test.items.count()
    return pool > 0 and pool_problem(pool, test.items_per_try) is None


def failed_message(test: QualificationTest, attempt: QualificationAttempt | None = None) -> str:
    """The polite words for a try below the pass mark (with or without tries left): pass or fail
    only, after every try, never how many matched or which items differed, since a count or a list
    lets throwaway ids of one person work the answers out.
    `QualificationTest.show_wrong_items_after_last_try` is no longer honoured."""
    lead = "Thank you for taking the qualification test. Your answers did not reach this study's pass mark."
    left = attempts_left(test, attempt.worker, attempt.device) if attempt is not None else test.max_attempts
    if left == 0:
        return (
            f"{lead} You have no tries left, so we cannot offer you this study's tasks this time. Please "
            "return the study on the crowd platform; you will not be penalised, and we are grateful for your time."
        )
    return f"{lead} You may take the test again: {left} tr{'y' if left == 1 else 'ies'} left."


def needed(test: QualificationTest, total: int) -> int:
    """The number of matches that reaches the pass mark with `total` items."""
    for matches in range(total + 1):
        if total and matches / total >= test.pass_mark - 1e-9:
            return matches
    return total


def last_attempt(test: QualificationTest, worker: Worker | None) -> QualificationAttempt | None:
    """The worker's latest try, else the latest of an id linked to them (whose tries were counted)."""
    if worker is None:
        return None
    own = QualificationAttempt.objects.filter(test=test, worker=worker).first()
    if own is not None:
        return own
    workers, devices = linked(worker)
    return QualificationAttempt.objects.filter(Q(worker_id__in=workers) | Q(device__in=devices), test=test).first()


def test_for(study: Study) -> QualificationTest | None:
    return QualificationTest.objects.filter(study=study).first()


def has_passed(test: QualificationTest, worker: Worker | None) -> bool:
    return worker is not None and QualificationAttempt.objects.filter(test=test, worker=worker, passed=True).exists()


def linked(worker: Worker, device: str = "") -> tuple[set[int], set[str]]:
    """(the worker ids, the devices) whose tries count as `worker`'s: the devices this worker was
    seen on (study links, study sessions, tries) and `device`, and every id seen on one of them.

    One step out, not the whole graph: enough for throwaway ids in one browser, without one shared
    library computer joining every id that ever used it to every other browser of theirs."""
    devices = {device} if device else set()
    devices |= set(DeviceSighting.objects.filter(worker=worker).values_list("device", flat=True))
    devices |= set(StudySession.objects.filter(worker=worker).exclude(device="").values_list("device", flat=True))
    devices |= set(
        QualificationAttempt.objects.filter(worker=worker).exclude(device="").values_list("device", flat=True)
    )
    workers = {worker.pk}
    workers |= set(DeviceSighting.objects.filter(device__in=devices).values_list("worker_id", flat=True))
    workers |= set(StudySession.objects.filter(device__in=devices).values_list("worker_id", flat=True))
    return workers, devices


def attempts_used(test: QualificationTest, worker: Worker | None, device: str = "") -> int:
    """The tries of `worker` and of every id linked to it by a device (`linked`) at this test."""
    if worker is None:
        return 0
    workers, devices = linked(worker, device)
    return QualificationAttempt.objects.filter(Q(worker_id__in=workers) | Q(device__in=devices), test=test).count()


def attempts_left(test: QualificationTest, worker: Worker | None, device: str = "") -> int:
    return max(0, test.max_attempts - attempts_used(test, worker, device))


def open_draw(test: QualificationTest, worker: Worker, device: str = "") -> QualificationDraw:
    """The worker's try on screen: the open draw, or a new one drawn at random from the pool.

    Drawn under the worker's row lock, so two page loads at once share one draw (the partial unique
    constraint is the backstop). The caller checks first that the test is ready."""
    with transaction.atomic():
        Worker.objects.select_for_update(no_key=True).get(pk=worker.pk)
        draw = QualificationDraw.objects.filter(test=test, worker=worker, attempt__isnull=True).first()
        if draw is not None:
            return draw
        chosen = draw_fresh(test, worker, device)
        draw = QualificationDraw.objects.create(
            test=test, worker=worker, device=device, token=secrets.token_urlsafe(24)
        )
        QualificationDrawItem.objects.bulk_create(
            QualificationDrawItem(draw=draw, reference=reference, position=position, token=secrets.token_urlsafe(12))
            for position, reference in enumerate(chosen, 1)
        )
    return draw


def seen_items(test: QualificationTest, worker: Worker, device: str = "") -> set[int]:
    """The pool's items (ReferenceLabel pks) already drawn for this participant id or this browser."""
    shown_to = Q(draw__worker=worker) | Q(draw__device=device) if device else Q(draw__worker=worker)
    return set(QualificationDrawItem.objects.filter(shown_to, draw__test=test).values_list("reference_id", flat=True))


def draw_fresh(test: QualificationTest, worker: Worker, device: str = "") -> list[ReferenceLabel]:
    """A try's items at random from the pool, none this id or this browser was shown before where
    the pool has enough (then topped up at random from those seen): a second try answers other
    pairs than the first, so a fail says nothing the next try can reuse."""
    pool = list(test.items.all())
    seen = seen_items(test, worker, device)
    fresh = [item for item in pool if item.pk not in seen]
    wanted = min(test.items_per_try, len(pool))
    chosen = _RANDOM.sample(fresh, min(wanted, len(fresh)))
    if len(chosen) < wanted:
        chosen += _RANDOM.sample([item for item in pool if item.pk in seen], wanted - len(chosen))
    return chosen


def draw_items(draw: QualificationDraw) -> list[QualificationDrawItem]:
    """A draw's items in the order shown, with their pairs."""
    return list(draw.items.select_related("reference__pair__premise").order_by("position"))


@dataclass(frozen=True)
class TryResult:
    attempt: QualificationAttempt
    passed: bool
    attempts_left: int


def submit_attempt(
    test: QualificationTest,
    worker: Worker,
    draw_token: str,
    answers: Mapping[str, str],
    device: str = "",
) -> TryResult:
    """Score one try (`answers`: item token of the draw named by `draw_token` -> label) and save it
    with its answers, or refuse it whole (QualificationRefused, nothing saved): passed already, every
    try used (by them or an id seen in their browser), not this worker's open draw of this test, an
    item left unanswered, or a field naming no item of the draw."""
    given = {token: label for token, label in answers.items() if label}
    with transaction.atomic():
        # One try at a time per test: tries of linked ids (other rows) count against one limit.
        QualificationTest.objects.select_for_update(no_key=True).get(pk=test.pk)
        if has_passed(test, worker):
            raise QualificationRefused("You have passed this test already.")
        used = attempts_used(test, worker, device)
        if used >= test.max_attempts:
            raise QualificationRefused("You have used every try this test allows.")
        draw = QualificationDraw.objects.filter(
            test=test, worker=worker, token=draw_token, attempt__isnull=True
        ).first()
        if not draw_token or draw is None:
            raise QualificationRefused(OTHER_TRY_MESSAGE)
        by_token = {item.token: item for item in draw.items.select_related("reference")}
        if not by_token:
            raise QualificationRefused("This test has no items yet; please come back later.")
        if set(given) - set(by_token):
            raise QualificationRefused(
                "Answers were sent for pairs that are not on this try's page; nothing was saved."
            )
        bad = [token for token, label in given.items() if label not in LABELS]
        missing = [token for token in by_token if token not in given] + bad
        if missing:
            raise QualificationRefused(
                "Please choose one of the three answers for every pair; nothing was saved yet.", missing=missing
            )
        correct = sum(1 for token, item in by_token.items() if given[token] == item.reference.label)
        score = correct / len(by_token)
        passed = score >= test.pass_mark - 1e-9
        attempt = QualificationAttempt.objects.create(
            test=test,
            worker=worker,
            number=used + 1,
            correct=correct,
            total=len(by_token),
            score=score,
            passed=passed,
            seconds=(timezone.now() - draw.drawn_at).total_seconds(),
            device=device,
        )
        QualificationAnswer.objects.bulk_create(
            QualificationAnswer(
                attempt=attempt,
                reference=item.reference,
                label=given[token],
                is_correct=given[token] == item.reference.label,
            )
            for token, item in by_token.items()
        )
        draw.attempt = attempt
        draw.save(update_fields=["attempt"])
        if passed and test.grants_trusted and not worker.is_trusted and grants_trust(test.study):
            Worker.objects.filter(pk=worker.pk).update(is_trusted=True)
    return TryResult(attempt=attempt, passed=passed, attempts_left=max(0, test.max_attempts - used - 1))


def grants_trust(study: Study) -> bool:
    """Whether passing this study's test may make a worker trusted (the pool that trusted-only
    datasets are open to): only where the study's ids cost more than typing them (its market
    confirms each participant, or signed links; never an open link). Else throwaway ids, each in a
    fresh browser, learn the test from pass and fail and the last one is trusted everywhere."""
    return not study.open_link_unverified and ids_verified(study, market_confirms=market_confirms(study))


def admission_check(study: Study, worker: Worker | None) -> Refusal | None:
    """crowd.access's check for studies with access 'qualified' (registered in crowd.registry by annotation_site/wiring.py)."""
    if study.access != StudyAccess.QUALIFIED:
        return None
    test = test_for(study)
    if test is None or not is_ready(test):
        return Refusal(NOT_READY_MESSAGE)
    if has_passed(test, worker):
        return None
    if attempts_left(test, worker) == 0:
        return Refusal(failed_message(test, last_attempt(test, worker)), title="Thank you for your time")
    return Refusal(url=reverse("qualification", args=[study.slug]))
