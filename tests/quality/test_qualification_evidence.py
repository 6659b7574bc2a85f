"""Qualification answers are quality evidence: a study with a qualification test decides
at its first completion code. The test's items carry researchers' labels the worker did not help
make, so each answer weighs as a catch trial does (`sequential.REFERENCE_ACCURACY["qualification"]`),
before a single batch; a rule labeller's 50% on them and an honest worker's 85% tell the two apart
where one session of 30 labels alone does not."""

import pytest

from corpus.labels import LABELS
from quality import sequential
from quality.guessers import DEFERRED
from quality.models import QualificationTest, ReferenceLabel
from quality.selectors import guesser_evidence_by_worker, quality_evidence
from tests import factories
from tests.quality.qualification_helpers import take_try
from tests.quality.test_quality_test import RULE_LIKE, _session, _study

QUIZ = 20


def _quiz(study) -> QualificationTest:
    """A qualification test of QUIZ items a try, from a pool twice that, on `study` (whose access is
    left open: the evidence counts whether or not the test gates the study)."""
    test = QualificationTest.objects.create(study=study, pass_mark=0.5, max_attempts=1, items_per_try=QUIZ)
    reference_set = factories.dataset(f"{study.slug}-quiz")
    for number in range(2 * QUIZ):
        label = LABELS[number % 3]
        pair = factories.pair(reference_set, factories.premise(reference_set, factories.genre("fiction")), [label])
        test.items.add(ReferenceLabel.objects.create(pair=pair, label=label))
    return test


@pytest.mark.django_db
def test_a_rule_labeller_on_the_quiz_is_held_at_the_first_completion(make_worker):
    study = _study("quiz-rule")
    test = _quiz(study)
    worker = make_worker(username="rule")
    take_try(test, worker, correct=QUIZ // 2)  # 50%: a rule labeller's 0.515 against gold
    before = quality_evidence(worker)
    assert (before.items, before.agreements) == (QUIZ, QUIZ // 2)
    assert before.holds_code  # the quiz alone already leans to poor, before any batch
    session = _session(study, worker, RULE_LIKE, seconds_per_batch=40)
    # Without the quiz these 16 of 30 are only held for review (test_quality_test); with it the
    # quality test finds them poor. The chance test, asked first, may hold them too: 10 of 20 on
    # researchers' labels is far below an ordinary judge, but its chance is the worker's own answer
    # habits, which depend on which items the shuffled batches gave the rule's other answers (it
    # did not hold them in one of three whole runs here). Either finding holds the code, with its reason.
    assert session.completion_code == ""
    assert session.code_held_reason.startswith(
        ("Labels at chance so far: 26 of 50", "Labels probably below the study's acceptable accuracy: 26 of 50")
    ), session.code_held_reason
    after = quality_evidence(worker)
    assert (after.items, after.agreements, after.outcome) == (50, 26, sequential.POOR)


@pytest.mark.django_db
def test_an_honest_worker_at_85_percent_on_the_quiz_is_paid_or_deferred_never_held(make_worker):
    """The quiz's evidence counts in a first session (quality.guessers): with it, 20 of 30 is paid at
    once, and 16 of 30, which alone would be held for review, waits for a second batch
    (a DEFERRED hold) instead of being held."""
    study = _study("quiz-honest")
    test = _quiz(study)
    decent, unlucky = make_worker(username="decent"), make_worker(username="unlucky")
    for worker in (decent, unlucky):
        take_try(test, worker, correct=17)  # 85%
        assert quality_evidence(worker).outcome == sequential.ACCEPTABLE
    session = _session(study, decent, lambda k: k % 3 != 0, seconds_per_batch=40)
    assert session.completion_code == session.expected_completion_code() and session.code_held_reason == ""
    session = _session(study, unlucky, RULE_LIKE, seconds_per_batch=40)
    assert session.completion_code == "" and [held.kind for held in session.code_holds.all()] == [DEFERRED], (
        session.code_held_reason
    )


@pytest.mark.django_db
def test_quiz_answers_stay_out_of_the_evidence_about_the_other_labels(make_worker):
    """The catch-only flag and the catch bonus ask about labels that are not known answers, so they
    leave qualification answers out as they leave catch trials out."""
    study = _study("quiz-catch-only")
    worker = make_worker(username="quizzed")
    take_try(_quiz(study), worker, correct=QUIZ)
    assert guesser_evidence_by_worker([worker.pk])[worker.pk].items == QUIZ
    assert guesser_evidence_by_worker([worker.pk], catch_trials=False)[worker.pk].items == 0
