"""Qualification tests: who has passed, how many tries are left, and scoring a try.

A study with access 'qualified' admits a worker once they reach the test's pass mark
(`QualificationTest.pass_mark`, a share of its items answered as the researchers did). Tries are
limited (`max_attempts`); a try is saved whole (the attempt and every answer) or not at all, and
the worker's row lock makes two tries sent at once count one after the other, so no one gets a
try more than the test allows. The check that admits workers is registered with crowd
(`crowd.access`, see apps.py): crowd, below this app, never imports it.
"""

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import transaction
from django.urls import reverse

from corpus.models import Label, Worker
from crowd.access import Refusal
from crowd.models import Study, StudyAccess

from .models import QualificationAnswer, QualificationAttempt, QualificationTest, ReferenceLabel

LABELS = {Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value}


class QualificationRefused(Exception):
    """A try that cannot be taken or saved; the message is fit to show the worker."""

    def __init__(self, message: str, missing: Iterable[int] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.missing = list(missing)


def failed_message(test: QualificationTest, attempt: QualificationAttempt | None = None) -> str:
    """The polite words for a try below the pass mark (with or without tries left).

    Pass or fail only: how many answers matched is never said, since a count per try lets a worker
    (or a few ids of one person) work the answers out (issue 27). Where the test allows it, the
    items that were wrong are named after the last allowed try, when nothing can be retried.
    """
    lead = "Thank you for taking the qualification test. Your answers did not reach this study's pass mark."
    left = attempts_left(test, attempt.worker if attempt is not None else None)
    if left == 0:
        wrong = wrong_items(test, attempt) if attempt is not None and test.show_wrong_items_after_last_try else []
        if wrong:
            lead += f" On your last try, {'pair' if len(wrong) == 1 else 'pairs'} {', '.join(map(str, wrong))} differed"
            lead += " from the researchers' answers."
        return (
            f"{lead} You have no tries left, so we cannot offer you this study's tasks this time. Please "
            "return the study on the crowd platform; you will not be penalised, and we are grateful for your time."
        )
    return f"{lead} You may take the test again: {left} tr{'y' if left == 1 else 'ies'} left."


def wrong_items(test: QualificationTest, attempt: QualificationAttempt) -> list[int]:
    """The numbers (as shown on that try's page) of the items a try got wrong."""
    wrong = set(attempt.answers.filter(is_correct=False).values_list("reference_id", flat=True))
    shown = items_for(test, attempt.worker, attempt.number)
    return [number for number, item in enumerate(shown, 1) if item.pk in wrong]


def needed(test: QualificationTest, total: int) -> int:
    """The number of matches that reaches the pass mark with `total` items."""
    for matches in range(total + 1):
        if total and matches / total >= test.pass_mark - 1e-9:
            return matches
    return total


def test_for(study: Study) -> QualificationTest | None:
    return QualificationTest.objects.filter(study=study).first()


def has_passed(test: QualificationTest, worker: Worker | None) -> bool:
    return worker is not None and QualificationAttempt.objects.filter(test=test, worker=worker, passed=True).exists()


def attempts_used(test: QualificationTest, worker: Worker | None) -> int:
    if worker is None:
        return 0
    return QualificationAttempt.objects.filter(test=test, worker=worker).count()


def attempts_left(test: QualificationTest, worker: Worker | None) -> int:
    return max(0, test.max_attempts - attempts_used(test, worker))


def items_for(test: QualificationTest, worker: Worker, attempt_number: int) -> list[ReferenceLabel]:
    """The test's reference labels (with their pairs), in an order of this worker's and try's own."""
    items = list(test.items.select_related("pair__premise").order_by("pk"))
    random.Random(f"{test.pk}:{worker.pk}:{attempt_number}").shuffle(items)
    return items


@dataclass(frozen=True)
class TryResult:
    attempt: QualificationAttempt
    passed: bool
    attempts_left: int


def submit_attempt(
    test: QualificationTest,
    worker: Worker,
    answers: Mapping[int, str] | Mapping[str, str],
    seconds: float | None = None,
) -> TryResult:
    """Score one try (`answers`: pair pk -> label) and save it with its answers, or refuse it whole.

    Refused (QualificationRefused, nothing saved) when the worker has passed already, has no
    tries left, left an item unanswered, or answered a pair that is not in the test.
    """
    given = {int(pk): label for pk, label in answers.items() if label}
    with transaction.atomic():
        worker = Worker.objects.select_for_update(no_key=True).get(pk=worker.pk)
        if has_passed(test, worker):
            raise QualificationRefused("You have passed this test already.")
        used = attempts_used(test, worker)
        if used >= test.max_attempts:
            raise QualificationRefused("You have used every try this test allows.")
        items = list(test.items.order_by("pk"))
        if not items:
            raise QualificationRefused("This test has no items yet; please come back later.")
        by_pair = {item.pair_id: item for item in items}
        unknown = set(given) - set(by_pair)
        if unknown:
            raise QualificationRefused("Answers were sent for pairs that are not in this test; nothing was saved.")
        bad = [pk for pk, label in given.items() if label not in LABELS]
        missing = [pk for pk in by_pair if pk not in given] + bad
        if missing:
            raise QualificationRefused(
                "Please choose one of the three answers for every pair; nothing was saved yet.", missing=missing
            )
        correct = sum(1 for pk, item in by_pair.items() if given[pk] == item.label)
        score = correct / len(items)
        passed = score >= test.pass_mark - 1e-9
        attempt = QualificationAttempt.objects.create(
            test=test,
            worker=worker,
            number=used + 1,
            correct=correct,
            total=len(items),
            score=score,
            passed=passed,
            seconds=seconds,
        )
        QualificationAnswer.objects.bulk_create(
            QualificationAnswer(attempt=attempt, reference=item, label=given[pk], is_correct=given[pk] == item.label)
            for pk, item in by_pair.items()
        )
        if passed and test.grants_trusted and not worker.is_trusted:
            Worker.objects.filter(pk=worker.pk).update(is_trusted=True)
    return TryResult(attempt=attempt, passed=passed, attempts_left=max(0, test.max_attempts - used - 1))


def admission_check(study: Study, worker: Worker | None) -> Refusal | None:
    """crowd.access's check for studies with access 'qualified' (registered in crowd.registry by annotation_site/wiring.py)."""
    if study.access != StudyAccess.QUALIFIED:
        return None
    test = test_for(study)
    if test is None or not test.items.exists():
        return Refusal(
            "Thank you for your interest. This study asks for a qualification test that is not ready yet. "
            "Please return the study on the crowd platform; you will not be penalised."
        )
    if has_passed(test, worker):
        return None
    if attempts_left(test, worker) == 0:
        last = QualificationAttempt.objects.filter(test=test, worker=worker).first()
        return Refusal(failed_message(test, last), title="Thank you for your time")
    return Refusal(url=reverse("qualification", args=[study.slug]))
