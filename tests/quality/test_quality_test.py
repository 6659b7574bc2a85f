"""The quality test beside the chance test.

The chance test weighs "at chance" against "ordinary" and a worker at 50-56% agreement gives it no
evidence either way: rule-based labellers were paid about half the time. The quality test weighs the
study's "poor" accuracy (0.55) against its "acceptable" one (0.75), each reference weighted by how
often it is right, speed counted as evidence, and holds the code of a worker who is probably poor,
or (held for review) whose answers lean to poor without deciding.
Figures over many simulated workers: bench/quality_test.py (docs/quality.md)."""

import itertools
import math

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from corpus.labels import LABELS
from corpus.models import LabelScheme
from crowd.models import Study, StudySession, TaskKind
from quality import sequential
from quality.guessers import DEFERRED, GUESSER, hold_code_of_guesser, hold_findings
from quality.selectors import quality_evidence, sequential_evidence
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation.models import ValidationClaim

WRITTEN = sequential.REFERENCE_ACCURACY["written"]


def written_stratum(agreements: int, items: int, reference_accuracy: float = WRITTEN) -> sequential.QualityStratum:
    """`items` answers against written labels spread evenly over three labels (chance a third)."""
    share = {label: items // 3 + (number < items % 3) for number, label in enumerate(LABELS)}
    return sequential.QualityStratum(
        own=share, reference=share, agreements=agreements, reference_accuracy=reference_accuracy
    )


def first_hold(agreeing, *, labels: int = 300, **speed) -> int | None:
    """The number of labels after which the test first holds a worker whose k-th answer agrees when
    `agreeing(k)`; checked after every batch of five, as sessions end on batches."""
    agreements = 0
    for number in range(1, labels + 1):
        agreements += agreeing(number)
        if (
            number % 5 == 0
            and sequential.sequential_quality_test([written_stratum(agreements, number)], **speed).holds_code
        ):
            return number
    return None


def test_a_worker_at_half_is_held_within_six_batches_and_one_at_ninety_never():
    half = first_hold(lambda k: k % 2 == 0)
    ninety = first_hold(lambda k: k % 10 != 0)
    eighty = first_hold(lambda k: k % 5 != 0)
    print(f"\nheld after: 50% agreement {half} labels, 80% {eighty}, 90% {ninety}")
    assert half is not None and half <= 30
    assert ninety is None and eighty is None
    at_half = sequential.sequential_quality_test([written_stratum(50, 100)])
    assert at_half.decision == sequential.POOR and at_half.posterior_poor > 0.99
    at_ninety = sequential.sequential_quality_test([written_stratum(54, 60)])
    assert at_ninety.decision == sequential.ACCEPTABLE and not at_ninety.holds_code


def test_the_chance_test_has_no_word_for_a_rule_labeller_and_the_quality_test_has():
    """55% agreement over 60 labels: neither "at chance" nor "ordinary" to the chance test, held by
    the quality test."""
    chance = sequential.sequential_guesser_test(33, 60, 1 / 3, sequential.ORDINARY_AGREEMENT)
    quality = sequential.sequential_quality_test([written_stratum(33, 60)])
    assert chance.decision == sequential.UNDECIDED and not chance.holds_code
    assert quality.holds_code


def test_each_reference_weighs_by_how_often_it_is_right():
    """A disagreement with a researcher's catch-trial label says more than one with another judge."""
    catch = sequential.stratum_log_ratio(written_stratum(0, 3, sequential.REFERENCE_ACCURACY["catch"]), 0.55, 0.75)
    written = sequential.stratum_log_ratio(written_stratum(0, 3), 0.55, 0.75)
    other = sequential.stratum_log_ratio(written_stratum(0, 3, sequential.REFERENCE_ACCURACY["one other"]), 0.55, 0.75)
    assert catch > written > other > 0
    # A worker at the acceptable level agrees with a reference right 90% of the time 0.69 of the time.
    assert sequential.expected_agreement(0.75, 0.9) == pytest.approx(0.75 * 0.9 + 0.25 * 0.1 / 2)


def test_too_fast_is_evidence_of_poor():
    """The same 20 answers, half agreeing: at a reading pace not held, at 3 s an item (too fast)
    held; 60% agreeing: held at 0.3 s an item (far too fast), not at 3 s."""
    answers = [written_stratum(10, 20)]
    careful = sequential.sequential_quality_test(answers, timed_items=20, median_seconds=6.0)
    fast = sequential.sequential_quality_test(answers, timed_items=20, median_seconds=3.0)
    # Half agreeing at a reading pace leans to poor, undecided: held for review, not as poor.
    assert careful.outcome == sequential.UNDECIDED_HELD and careful.speed_log_ratio == 0
    assert fast.outcome == sequential.POOR and fast.speed_log_ratio == pytest.approx(
        math.log(sequential.TOO_FAST_LIKELIHOOD_RATIO)
    )
    assert "too fast to read" in fast.reason
    better = [written_stratum(18, 30)]
    assert not sequential.sequential_quality_test(better, timed_items=30, median_seconds=3.0).holds_code
    assert sequential.sequential_quality_test(better, timed_items=30, median_seconds=0.3).holds_code
    # Speed alone holds nobody, and a fast worker who is right is not held.
    assert not sequential.sequential_quality_test([], timed_items=20, median_seconds=0.3).holds_code
    assert not sequential.sequential_quality_test(
        [written_stratum(18, 20)], timed_items=20, median_seconds=0.3
    ).holds_code


def test_the_false_hold_rate_is_the_share_of_honest_workers_the_test_holds():
    """`false_hold_rate` against the test itself: every agreement count of n answers, weighed by
    its binomial probability for a worker exactly at the acceptable level."""
    from scipy.stats import binom

    for labels in (12, 30, 60):  # multiples of three: answers spread evenly, chance exactly a third
        high = sequential.expected_agreement(0.75, WRITTEN)
        held = sum(
            binom.pmf(k, labels, high)
            for k in range(labels + 1)
            if sequential.sequential_quality_test([written_stratum(k, labels)]).holds_code
        )
        assert sequential.false_hold_rate(0.55, 0.75, labels) == pytest.approx(held)
    rates = [sequential.false_hold_rate(0.55, 0.75, n) for n in (30, 120, 480)]
    # At the pay rule's 0.7 an honest worker exactly at 75% is held (for review) 5.5% of the time after 30 labels.
    assert rates == sorted(rates, reverse=True) and rates[0] < 0.06 and rates[1] < 0.02


@pytest.mark.parametrize("poor, acceptable", [(0.75, 0.75), (0.8, 0.7), (0.3, 0.75), (0.55, 1.0)])
def test_levels_out_of_order_are_refused(poor, acceptable):
    with pytest.raises(ValueError):
        sequential.check_quality_levels(poor, acceptable)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "poor, acceptable, field",
    [
        (0.75, 0.75, "poor_accuracy"),
        (0.6, 0.5, "poor_accuracy"),
        (0.3, 0.75, "poor_accuracy"),
        (0.55, 1.0, "acceptable_accuracy"),
        (0.55, 0.2, "acceptable_accuracy"),
    ],
)
def test_a_study_refuses_levels_the_test_cannot_weigh(poor, acceptable, field):
    study = Study(
        slug="levels",
        name="Levels",
        dataset=make_dataset("levels"),
        task_kind=TaskKind.VALIDATION,
        poor_accuracy=poor,
        acceptable_accuracy=acceptable,
    )
    with pytest.raises(ValidationError) as refused:
        study.full_clean()
    assert field in refused.value.message_dict


@pytest.mark.django_db
def test_on_a_two_way_dataset_chance_is_a_half():
    dataset = make_dataset("two-way-levels")
    dataset.label_scheme = LabelScheme.TWO_WAY
    dataset.save()
    study = Study(
        slug="two",
        name="Two",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="TWO",
        poor_accuracy=0.45,
    )
    with pytest.raises(ValidationError) as refused:
        study.full_clean()
    assert "poor_accuracy" in refused.value.message_dict
    study.poor_accuracy = 0.6
    study.full_clean()  # the defaults' acceptable 0.75 with poor 0.6 pass


def _study(slug: str, **options) -> Study:
    dataset = make_dataset(slug)
    for number in range(45):
        make_pair(dataset, label=LABELS[number % 3])
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=6,
        completion_code=slug.upper(),
        catch_trial_share=0,
        hold_code_at_chance=True,
        **options,
    )


def _session(study: Study, worker, agrees, seconds_per_batch: float) -> StudySession:
    """Six batches of five through the validation services, the k-th answer agreeing with the
    written label when `agrees(k)` (else the next label), each batch submitted after `seconds_per_batch`."""
    from validation.batch_claims import claim_validation_batch
    from validation.services import submit_validation_batch

    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{worker.pk}")
    turn = itertools.count()
    for _ in range(study.tasks_per_batch):
        batch = present(claim_validation_batch(worker, study_session=session))
        labels = {}
        for claim in ValidationClaim.objects.filter(batch=batch).select_related("pair"):
            written = LABELS.index(claim.pair.author_label)
            labels[claim.pair_id] = LABELS[written if agrees(next(turn)) else (written + 1) % 3]
        submit_validation_batch(worker, batch, labels, seconds=seconds_per_batch)
    session.refresh_from_db()
    assert session.is_complete
    return session


# 16 of 30 answers agree with the written label (53%): the chance test's evidence leans "ordinary"
# (below its hold), the quality test's leans "poor" (1.5 of the 2.2 its hold asks).
RULE_LIKE = lambda k: k % 15 < 8  # noqa: E731


def test_three_outcomes_better_than_chance_is_not_paid_until_shown_acceptable():
    """Three outcomes: "better than chance but worse than acceptable is not paid". Over 30 answers against
    written labels: 12 agreeing is poor, 16 (53%, a rule labeller's) leans to poor and is held for
    review, 17 (57%) is not held, 20 (an honest worker at 75% expects 20.6) is paid."""
    outcomes = {k: sequential.sequential_quality_test([written_stratum(k, 30)]).outcome for k in (12, 16, 17, 20)}
    assert outcomes == {
        12: sequential.POOR,
        16: sequential.UNDECIDED_HELD,
        17: sequential.ACCEPTABLE,
        20: sequential.ACCEPTABLE,
    }
    # The chance test has no word for 16 of 30; the quality test holds it, for review.
    assert not sequential.sequential_guesser_test(16, 30, 1 / 3, sequential.ORDINARY_AGREEMENT).holds_code
    assert sequential.sequential_quality_test([written_stratum(16, 30)]).holds_code


@pytest.mark.django_db
def test_a_fast_rule_like_worker_is_held_as_poor_and_a_careful_one_for_review(make_worker):
    study = _study("quality-hold")
    fast = _session(study, make_worker(username="fast"), RULE_LIKE, seconds_per_batch=1.5)
    assert not sequential_evidence(fast.worker).holds_code  # not the chance test's finding
    evidence = quality_evidence(fast.worker)
    assert evidence.items == 30 and evidence.agreements == 16 and evidence.speed_log_ratio > 0
    assert [held.kind for held in fast.code_holds.all()] == [GUESSER]
    assert fast.completion_code == "" and fast.code_held_reason.startswith(
        "Labels probably below the study's acceptable accuracy: 16 of 30 answers"
    )
    assert "too fast to read" in fast.code_held_reason
    careful = _session(study, make_worker(username="careful"), RULE_LIKE, seconds_per_batch=40)
    assert quality_evidence(careful.worker).speed_log_ratio == 0
    # At a reading pace the same answers lean to poor without deciding: not paid, held for review.
    assert careful.completion_code == "" and careful.code_held_reason.startswith(
        "Labels not yet shown to reach the study's acceptable accuracy (held for review): 16 of 30 answers"
    )
    # Two answers in three agreeing (the written label is right nine times in ten) is not held by the
    # study's levels; as a first session it is not a validator's evidence yet: deferred, not held.
    decent = _session(study, make_worker(username="decent"), lambda k: k % 3 != 0, seconds_per_batch=40)
    assert [held.kind for held in decent.code_holds.all()] == [DEFERRED]
    assert not hold_findings(decent.worker, study)


@pytest.mark.django_db
def test_honest_workers_keep_their_codes_fast_or_not(make_worker):
    study = _study("quality-honest")
    for name, seconds in (("honest-fast", 1.5), ("honest", 40)):
        session = _session(study, make_worker(username=name), lambda k: k % 10 != 0, seconds_per_batch=seconds)
        assert session.completion_code and session.code_held_reason == ""


@pytest.mark.django_db
def test_the_study_levels_decide(make_worker):
    """The same answers (60% agree) held in a strict study (poor 0.7, acceptable 0.9), not in a lenient one."""
    strict = _study("quality-strict", poor_accuracy=0.7, acceptable_accuracy=0.9)
    session = _session(strict, make_worker(username="middling"), lambda k: k % 5 < 3, seconds_per_batch=40)
    assert "below the study's acceptable accuracy" in session.code_held_reason
    lenient = Study.objects.get(pk=strict.pk)
    lenient.poor_accuracy, lenient.acceptable_accuracy = 0.45, 0.6
    session.study = lenient
    assert hold_code_of_guesser(session) == []


@pytest.mark.django_db
def test_the_study_form_shows_the_false_hold_rate(admin_client):
    study = _study("quality-form")
    page = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).content.decode()
    rate = sequential.false_hold_rate(0.55, 0.75, 60)
    assert "Quality test: honest workers held" in page
    assert f"{rate:.1%} after 60 labels" in page
    assert 'name="poor_accuracy"' in page and 'name="acceptable_accuracy"' in page
