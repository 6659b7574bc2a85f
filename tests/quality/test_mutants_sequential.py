"""quality/sequential.py at its edges: Wald's bounds reached exactly, the chance clamped apart from
the ordinary agreement, the strata's evidence added up and empty strata left out, the catch-only
flag at its minimum and its accuracy bar, the quality test's levels carried to each stratum's
chance, its three outcomes at their posteriors (speed moving a worker to "poor" but never to a
review), the speed evidence at its two thresholds, the levels it refuses, and the false-hold rate
against an exact binomial sum.

Every expectation is computed by hand from the formulas in the module's comments; no database."""

import math

import pytest
from scipy.stats import binom

from quality.sequential import (
    ACCEPTABLE,
    AT_CHANCE,
    CATCH_ONLY,
    ORDINARY,
    OTHERS_KAPPA,
    POOR,
    UNDECIDED,
    UNDECIDED_HELD,
    QualityResult,
    QualityStratum,
    SequentialResult,
    Stratum,
    _wald_decision,
    catch_only_flag,
    check_quality_levels,
    combined_sequential_test,
    expected_agreement,
    false_hold_rate,
    level_agreement,
    ordinary_agreement,
    sequential_guesser_test,
    sequential_quality_test,
    stratum_log_ratio,
    too_fast_log_ratio,
)

# log(P(agree | chance 1/3) / P(agree | ordinary 0.75)) and the same for a disagreement.
AGREE_AT_THIRD = math.log((1 / 3) / 0.75)
DISAGREE_AT_THIRD = math.log((2 / 3) / 0.25)
# The logit of 0.7 (PAY_POSTERIOR_POOR): a log ratio whose posterior is exactly 0.7 in floating point.
LOGIT_SEVEN_TENTHS = 0.8472978603872034


def chance_result(log_ratio: float, items: int = 20, agreements: int = 6) -> SequentialResult:
    return SequentialResult(items, agreements, 1 / 3, log_ratio, UNDECIDED)


def quality_result(
    agreement: float, speed: float = 0.0, items: int = 20, median_seconds: float | None = None
) -> QualityResult:
    return QualityResult(
        items=items,
        agreements=11,
        poor=0.55,
        acceptable=0.75,
        agreement_log_ratio=agreement,
        speed_log_ratio=speed,
        decision=UNDECIDED,
        median_seconds=median_seconds,
    )


# --- the chance test -----------------------------------------------------------------------------


def test_the_posterior_at_chance_is_the_logistic_of_the_log_ratio() -> None:
    assert chance_result(0.0).posterior_at_chance == 0.5
    assert chance_result(2.0).posterior_at_chance == pytest.approx(0.8807970779778823, rel=1e-12)
    assert chance_result(-math.log(3)).posterior_at_chance == pytest.approx(0.25, rel=1e-12)


def test_a_code_is_held_on_a_posterior_of_ninety_percent_and_never_without_labels() -> None:
    assert chance_result(math.log(9.01), items=1).holds_code
    assert not chance_result(math.log(8.99), items=1).holds_code
    assert not chance_result(10.0, items=0, agreements=0).holds_code
    assert not chance_result(-5.0, items=5).holds_code


def test_the_chance_reason_gives_the_counts_shares_and_evidence() -> None:
    assert chance_result(3.0).reason == (
        "6 of 20 answers agree with their items' reference (written label, researchers' label or other judges) "
        "(30% where chance is 33% and an ordinary judge reaches about 75%); "
        "log-likelihood ratio 3.0, P(at chance) 0.95"
    )
    assert chance_result(0.0, items=0, agreements=0).reason == "no labels yet"


def test_the_guesser_test_adds_a_log_ratio_per_agreement_and_per_disagreement() -> None:
    result = sequential_guesser_test(3, 10, 1 / 3)
    assert (result.items, result.agreements, result.chance) == (10, 3, 1 / 3)
    assert result.log_ratio == pytest.approx(3 * AGREE_AT_THIRD + 7 * DISAGREE_AT_THIRD, rel=1e-12)
    assert result.decision == UNDECIDED


def test_the_guesser_test_decides_at_wald_bounds_of_one_percent_by_default() -> None:
    # Bounds ±log(99) = ±4.595: five disagreements at a third reach it (4.90), four do not (3.92).
    assert sequential_guesser_test(0, 5, 1 / 3).decision == AT_CHANCE
    assert sequential_guesser_test(0, 4, 1 / 3).decision == UNDECIDED
    # Each agreement weighs -0.811: six agreements fall below -4.595, five (-4.05) do not.
    assert sequential_guesser_test(6, 6, 1 / 3).decision == ORDINARY
    assert sequential_guesser_test(5, 5, 1 / 3).decision == UNDECIDED


def test_the_guesser_test_passes_its_own_error_rates_and_ordinary_agreement_to_the_decision() -> None:
    # Two disagreements weigh 1.96: above log(0.9 / 0.25) = 1.28, below log(0.75 / 0.1) = 2.01.
    assert sequential_guesser_test(0, 2, 1 / 3, alpha=0.25, beta=0.1).decision == AT_CHANCE
    assert sequential_guesser_test(0, 2, 1 / 3, alpha=0.1, beta=0.25).decision == UNDECIDED
    result = sequential_guesser_test(1, 2, 0.4, ordinary=0.8)
    assert result.log_ratio == pytest.approx(math.log(0.4 / 0.8) + math.log(0.6 / 0.2), rel=1e-12)


def test_the_chance_is_kept_between_five_percent_and_five_points_below_the_ordinary_agreement() -> None:
    low = sequential_guesser_test(1, 3, 0.01)
    assert low.chance == 0.05
    assert low.log_ratio == pytest.approx(math.log(0.05 / 0.75) + 2 * math.log(0.95 / 0.25), rel=1e-12)
    high = sequential_guesser_test(1, 3, 0.9)
    assert high.chance == pytest.approx(0.7, rel=1e-12)
    assert high.log_ratio == pytest.approx(math.log(0.7 / 0.75) + 2 * math.log(0.3 / 0.25), rel=1e-12)
    assert sequential_guesser_test(1, 3, 0.9, ordinary=0.6).chance == pytest.approx(0.55, rel=1e-12)
    assert sequential_guesser_test(1, 3, 0.3).chance == 0.3


def test_wald_decides_exactly_at_its_bounds() -> None:
    upper = math.log((1 - 0.1) / 0.25)
    lower = math.log(0.1 / (1 - 0.25))
    assert _wald_decision(upper, 0.25, 0.1) == AT_CHANCE
    assert _wald_decision(math.nextafter(upper, -math.inf), 0.25, 0.1) == UNDECIDED
    assert _wald_decision(lower, 0.25, 0.1) == ORDINARY
    assert _wald_decision(math.nextafter(lower, math.inf), 0.25, 0.1) == UNDECIDED
    assert _wald_decision(0.0, 0.25, 0.1) == UNDECIDED


# --- one evidence over every kind ------------------------------------------------------------------


def test_an_ordinary_judge_is_kappa_of_the_way_from_chance_to_full_agreement() -> None:
    assert ordinary_agreement(1 / 3) == pytest.approx(0.75, rel=1e-12)
    assert ordinary_agreement(0.5) == pytest.approx(0.8125, rel=1e-12)
    assert ordinary_agreement(0.6, 0.5) == pytest.approx(0.8, rel=1e-12)


def test_an_ordinary_judge_is_never_below_three_balanced_labels_nor_above_ninety_five_percent() -> None:
    assert ordinary_agreement(0.0) == pytest.approx(0.75, rel=1e-12)
    assert ordinary_agreement(0.2, OTHERS_KAPPA) == pytest.approx(1 / 3 + 0.4 * 2 / 3, rel=1e-12)
    assert ordinary_agreement(0.9) == 0.95
    assert ordinary_agreement(1.0) == 0.95


def test_a_stratum_counts_the_workers_own_answers() -> None:
    assert Stratum(own={"entailment": 2, "neutral": 3}, reference={"entailment": 9}, agreements=1).items == 5
    quality = QualityStratum(own={"entailment": 4, "neutral": 1}, reference={}, agreements=1, reference_accuracy=0.9)
    assert quality.items == 5


def test_the_combined_test_adds_each_strata_log_ratio_at_its_own_chance_and_kappa() -> None:
    # Chance 0.5·0.5 + 0.25·0.5 = 0.375, ordinary 0.375 + 0.625·0.625 = 0.765625.
    first = Stratum(
        own={"entailment": 2, "neutral": 1, "contradiction": 1}, reference={"entailment": 2, "neutral": 2}, agreements=2
    )
    # Chance 0.5, ordinary at kappa 0.4: 0.5 + 0.4·0.5 = 0.7.
    second = Stratum(
        own={"entailment": 3, "neutral": 3}, reference={"entailment": 3, "neutral": 3}, agreements=3, kappa=0.4
    )
    empty = Stratum(own={}, reference={"entailment": 1}, agreements=4)
    result = combined_sequential_test([first, empty, second])
    assert (result.items, result.agreements) == (10, 5)
    assert result.chance == pytest.approx((0.375 * 4 + 0.5 * 6) / 10, rel=1e-12)
    expected = (
        2 * math.log(0.375 / 0.765625)
        + 2 * math.log(0.625 / 0.234375)
        + 3 * math.log(0.5 / 0.7)
        + 3 * math.log(0.5 / 0.3)
    )
    assert result.log_ratio == pytest.approx(expected, rel=1e-12)
    assert result.decision == UNDECIDED


def test_the_combined_test_without_answers_is_undecided_at_a_third() -> None:
    result = combined_sequential_test([Stratum(own={}, reference={}, agreements=0)])
    assert (result.items, result.agreements, result.chance, result.log_ratio) == (0, 0, 1 / 3, 0)
    assert result.decision == UNDECIDED
    assert combined_sequential_test([]).chance == 1 / 3


def test_the_combined_test_decides_on_the_sum_at_one_percent_bounds() -> None:
    balanced = {"entailment": 2, "neutral": 2, "contradiction": 2}
    # Each stratum: chance 1/3, ordinary 0.75. One agreement in six weighs 4.09, two such strata 8.19.
    guessing = Stratum(own=balanced, reference=balanced, agreements=1)
    assert combined_sequential_test([guessing]).decision == UNDECIDED
    assert combined_sequential_test([guessing, guessing]).decision == AT_CHANCE
    # Five agreements in six weigh -3.07, two such strata -6.14.
    right = Stratum(own=balanced, reference=balanced, agreements=5)
    assert combined_sequential_test([right]).decision == UNDECIDED
    assert combined_sequential_test([right, right]).decision == ORDINARY


# --- catch trials right, ordinary labels at chance -------------------------------------------------


def test_catch_trials_right_beside_chance_labels_are_flagged_with_their_figures() -> None:
    evidence = chance_result(3.0)
    flag = catch_only_flag("w1", 3, 3, evidence)
    assert flag is not None
    assert (flag.worker, flag.kind) == ("w1", CATCH_ONLY)
    assert flag.reason == f"Catch trials right (3 of 3) while ordinary labels are at chance: {evidence.reason}."
    assert flag.figures == {
        "catch_seen": 3,
        "catch_matched": 3,
        "ordinary_items": 20,
        "ordinary_agreements": 6,
        "posterior_at_chance": 0.9526,
    }


def test_catch_only_needs_three_catch_trials_and_eighty_percent_of_them() -> None:
    evidence = chance_result(3.0)
    assert catch_only_flag("w1", 2, 2, evidence) is None
    assert catch_only_flag("w1", 5, 4, evidence) is not None
    assert catch_only_flag("w1", 4, 3, evidence) is None
    assert catch_only_flag("w1", 10, 7, evidence) is None


def test_catch_only_needs_ordinary_labels_held_at_chance() -> None:
    assert catch_only_flag("w1", 5, 5, chance_result(2.0)) is None
    assert catch_only_flag("w1", 5, 5, chance_result(5.0, items=0, agreements=0)) is None


# --- the quality test --------------------------------------------------------------------------


def test_the_expected_agreement_is_both_right_or_both_wrong_the_same_way() -> None:
    assert expected_agreement(0.75, 0.9) == pytest.approx(0.675 + 0.25 * 0.1 / 2, rel=1e-12)
    assert expected_agreement(0.75, 0.9, 2) == pytest.approx(0.675 + 0.25 * 0.1, rel=1e-12)
    assert expected_agreement(0.55, 0.95, 4) == pytest.approx(0.5225 + 0.45 * 0.05 / 3, rel=1e-12)


def test_a_level_is_the_expected_agreement_on_balanced_labels_and_rises_with_chance() -> None:
    # Acceptable against written labels: 0.6875, a kappa of (0.6875 - 1/3) / (2/3) = 0.53125.
    assert level_agreement(0.75, 0.9, math.nan) == pytest.approx(0.6875, rel=1e-12)
    assert level_agreement(0.75, 0.9, 1 / 3) == pytest.approx(0.6875, rel=1e-12)
    assert level_agreement(0.75, 0.9, 0.6) == pytest.approx(0.6 + 0.53125 * 0.4, rel=1e-12)
    assert level_agreement(0.55, 0.9, 0.6) == pytest.approx(0.6 + 0.27625 * 0.4, rel=1e-12)


def test_a_levels_chance_is_kept_between_balanced_labels_and_ninety_five_percent() -> None:
    assert level_agreement(0.75, 0.9, 0.2) == pytest.approx(0.6875, rel=1e-12)
    assert level_agreement(0.75, 0.9, 0.99) == pytest.approx(0.95 + 0.53125 * 0.05, rel=1e-12)


def test_a_level_on_two_way_labels_counts_from_a_half() -> None:
    # Two labels: 0.675 + 0.025 = 0.7 on balanced labels, a kappa of 0.4.
    assert level_agreement(0.75, 0.9, math.nan, 2) == pytest.approx(0.7, rel=1e-12)
    assert level_agreement(0.75, 0.9, 0.4, 2) == pytest.approx(0.7, rel=1e-12)
    assert level_agreement(0.75, 0.9, 0.6, 2) == pytest.approx(0.6 + 0.4 * 0.4, rel=1e-12)


def test_the_quality_log_ratio_sums_the_agreement_and_speed_evidence() -> None:
    result = quality_result(1.0, math.log(4))
    assert result.log_ratio == pytest.approx(1.0 + math.log(4), rel=1e-12)
    assert result.posterior_poor == pytest.approx(1 / (1 + math.exp(-1.0 - math.log(4))), rel=1e-12)
    assert quality_result(2.0).posterior_poor == pytest.approx(0.8807970779778823, rel=1e-12)
    assert quality_result(0.0).posterior_poor == 0.5


def test_without_answers_a_worker_is_paid_whatever_the_speed() -> None:
    result = quality_result(0.0, math.log(50), items=0)
    assert result.outcome == ACCEPTABLE
    assert not result.holds_code


def test_poor_at_a_posterior_of_ninety_percent() -> None:
    assert quality_result(math.log(9.01), items=1).outcome == POOR
    assert quality_result(math.log(9.01), items=1).holds_code
    assert quality_result(math.log(8.99)).outcome == UNDECIDED_HELD


def test_answers_leaning_to_poor_at_seventy_percent_are_held_for_review() -> None:
    at = quality_result(LOGIT_SEVEN_TENTHS)
    assert at.posterior_poor == 0.7
    assert at.outcome == UNDECIDED_HELD
    assert at.holds_code
    below = quality_result(math.log(0.699 / 0.301))
    assert below.outcome == ACCEPTABLE
    assert not below.holds_code


def test_speed_moves_a_worker_to_poor_but_never_to_a_review() -> None:
    # Answers at P(poor) 0.62: with "too fast" (ratio 4) 0.87, not held; "far too fast" (50) 0.99, poor.
    assert quality_result(0.5, math.log(4)).outcome == ACCEPTABLE
    assert quality_result(0.5, math.log(50)).outcome == POOR


def test_the_quality_reason_gives_counts_speed_and_posterior() -> None:
    assert quality_result(1.0, math.log(4), median_seconds=3.4).reason == (
        "11 of 20 answers agree with their items' reference (55%); "
        "median 3.4 s an item, too fast to read (counted as evidence); "
        "P(accuracy about 55% rather than the study's acceptable 75%) 0.92"
    )
    assert quality_result(1.0, median_seconds=5.0).reason == (
        "11 of 20 answers agree with their items' reference (55%); "
        "P(accuracy about 55% rather than the study's acceptable 75%) 0.73"
    )
    assert quality_result(1.0, items=0).reason == "no answers yet"


def test_speed_is_evidence_below_four_seconds_over_ten_timed_items() -> None:
    assert too_fast_log_ratio(10, 3.9) == math.log(4.0)
    assert too_fast_log_ratio(9, 3.9) == 0.0
    assert too_fast_log_ratio(10, 4.0) == 0.0
    assert too_fast_log_ratio(10, None) == 0.0
    assert too_fast_log_ratio(10, 2.0) == math.log(4.0)


def test_below_two_seconds_speed_weighs_a_ratio_of_fifty() -> None:
    assert too_fast_log_ratio(10, 1.99) == math.log(50.0)
    assert too_fast_log_ratio(30, 0.5) == math.log(50.0)


def test_a_strata_log_ratio_weighs_its_answers_at_both_levels_against_its_reference() -> None:
    # Chance 0.5·0.75 + 0.5·0.25 = 0.5; levels 0.5 + 0.27625·0.5 = 0.638125 and 0.5 + 0.53125·0.5 = 0.765625.
    stratum = QualityStratum(
        own={"entailment": 2, "neutral": 2},
        reference={"entailment": 3, "neutral": 1},
        agreements=3,
        reference_accuracy=0.9,
    )
    expected = 3 * math.log(0.638125 / 0.765625) + math.log(0.361875 / 0.234375)
    assert stratum_log_ratio(stratum, 0.55, 0.75) == pytest.approx(expected, rel=1e-12)


def test_a_two_way_strata_log_ratio_uses_its_own_number_of_labels() -> None:
    # Two labels, chance 0.5: levels 0.54 (kappa 0.08) and 0.7 (kappa 0.4).
    stratum = QualityStratum(
        own={"entailment": 2, "not_entailment": 2},
        reference={"entailment": 2, "not_entailment": 2},
        agreements=2,
        reference_accuracy=0.9,
        labels=2,
    )
    expected = 2 * math.log(0.54 / 0.7) + 2 * math.log(0.46 / 0.3)
    assert stratum_log_ratio(stratum, 0.55, 0.75) == pytest.approx(expected, rel=1e-12)


def test_a_stratum_without_answers_weighs_nothing() -> None:
    empty = QualityStratum(own={}, reference={"entailment": 1}, agreements=2, reference_accuracy=0.9)
    assert stratum_log_ratio(empty, 0.55, 0.75) == 0.0


def balanced_stratum(agreements: int, items: int, reference_accuracy: float = 0.9) -> QualityStratum:
    share = {"entailment": items // 3, "neutral": items // 3, "contradiction": items - 2 * (items // 3)}
    return QualityStratum(
        own=share, reference=dict(share), agreements=agreements, reference_accuracy=reference_accuracy
    )


def test_the_quality_test_adds_its_strata_and_speed_and_keeps_its_levels() -> None:
    first = balanced_stratum(2, 3)
    second = balanced_stratum(4, 6, reference_accuracy=0.95)
    empty = QualityStratum(own={}, reference={"entailment": 1}, agreements=3, reference_accuracy=0.9)
    result = sequential_quality_test([first, empty, second], poor=0.5, acceptable=0.8, timed_items=10, median_seconds=3)
    # Balanced labels: each level is its expected agreement.
    low, high = 0.5 * 0.9 + 0.5 * 0.1 / 2, 0.8 * 0.9 + 0.2 * 0.1 / 2
    low_catch, high_catch = 0.5 * 0.95 + 0.5 * 0.05 / 2, 0.8 * 0.95 + 0.2 * 0.05 / 2
    expected = (
        2 * math.log(low / high)
        + math.log((1 - low) / (1 - high))
        + 4 * math.log(low_catch / high_catch)
        + 2 * math.log((1 - low_catch) / (1 - high_catch))
    )
    assert (result.items, result.agreements, result.poor, result.acceptable) == (9, 6, 0.5, 0.8)
    assert result.agreement_log_ratio == pytest.approx(expected, rel=1e-12)
    assert result.speed_log_ratio == math.log(4.0)
    assert result.median_seconds == 3
    assert result.decision == UNDECIDED


def test_the_quality_test_without_answers_weighs_nothing() -> None:
    result = sequential_quality_test([])
    assert (result.items, result.agreements, result.agreement_log_ratio, result.speed_log_ratio) == (0, 0, 0, 0)
    assert (result.poor, result.acceptable, result.median_seconds) == (0.55, 0.75, None)
    assert result.decision == UNDECIDED


def test_the_quality_test_decides_poor_or_acceptable_at_wald_bounds() -> None:
    assert sequential_quality_test([balanced_stratum(50, 100)]).decision == POOR
    assert sequential_quality_test([balanced_stratum(60, 60)]).decision == ACCEPTABLE
    assert sequential_quality_test([balanced_stratum(40, 60)]).decision == UNDECIDED


def test_the_quality_test_decides_on_speed_too_at_its_own_error_rates() -> None:
    # Speed alone weighs log 4 = 1.39: above log(0.9 / 0.25) = 1.28, below log(0.75 / 0.1) = 2.01.
    assert sequential_quality_test([], timed_items=10, median_seconds=3.0, alpha=0.25, beta=0.1).decision == POOR
    assert sequential_quality_test([], timed_items=10, median_seconds=3.0, alpha=0.1, beta=0.25).decision == UNDECIDED
    assert sequential_quality_test([], timed_items=10, median_seconds=3.0).decision == UNDECIDED


def test_the_quality_test_refuses_levels_it_cannot_weigh() -> None:
    with pytest.raises(ValueError, match="must be below the acceptable level"):
        sequential_quality_test([], poor=0.8, acceptable=0.7)


def test_levels_must_be_above_chance_apart_and_below_one() -> None:
    with pytest.raises(ValueError) as refused:
        check_quality_levels(0.8, 0.7)
    assert str(refused.value) == (
        "The poor level (0.8) must be below the acceptable level (0.7), both above chance (0.33) and below 1."
    )
    for poor, acceptable in ((1 / 3, 0.75), (0.7, 0.7), (0.55, 1.0), (0.3, 0.75)):
        with pytest.raises(ValueError):
            check_quality_levels(poor, acceptable)
    check_quality_levels(0.34, 0.99)


def test_on_two_labels_the_levels_must_be_above_a_half() -> None:
    with pytest.raises(ValueError, match=r"above chance \(0\.50\)"):
        check_quality_levels(0.45, 0.75, 2)
    with pytest.raises(ValueError):
        check_quality_levels(0.5, 0.75, 2)
    check_quality_levels(0.51, 0.75, 2)
    check_quality_levels(0.45, 0.75)


def exact_false_hold_rate(poor: float, acceptable: float, labels: int, reference_accuracy: float) -> float:
    """P(an honest worker at the acceptable level has P(poor) at least 0.7 after `labels` answers),
    summed over every number of agreements."""
    low = poor * reference_accuracy + (1 - poor) * (1 - reference_accuracy) / 2
    high = acceptable * reference_accuracy + (1 - acceptable) * (1 - reference_accuracy) / 2
    total = 0.0
    for agreements in range(labels + 1):
        log_ratio = agreements * math.log(low / high) + (labels - agreements) * math.log((1 - low) / (1 - high))
        if 1 / (1 + math.exp(-log_ratio)) >= 0.7:
            total += float(binom.pmf(agreements, labels, high))
    return total


@pytest.mark.parametrize(
    ("poor", "acceptable", "labels", "reference_accuracy"),
    [(0.55, 0.75, 30, 0.9), (0.6, 0.8, 20, 0.95), (0.5, 0.85, 45, 0.75), (0.65, 0.75, 12, 0.9)],
)
def test_the_false_hold_rate_is_the_binomial_mass_where_poor_reaches_seventy_percent(
    poor: float, acceptable: float, labels: int, reference_accuracy: float
) -> None:
    expected = exact_false_hold_rate(poor, acceptable, labels, reference_accuracy)
    assert expected > 0
    got = false_hold_rate(poor, acceptable, labels, reference_accuracy=reference_accuracy)
    assert got == pytest.approx(expected, rel=1e-9)


def test_the_false_hold_rate_is_against_written_labels_by_default() -> None:
    assert false_hold_rate(0.55, 0.75, 30) == pytest.approx(exact_false_hold_rate(0.55, 0.75, 30, 0.9), rel=1e-9)


def test_the_false_hold_rate_counts_a_hold_on_no_agreement_only() -> None:
    # Two answers, both disagreeing, reach P(poor) 0.70 (log ratio 0.868); one agreement does not.
    high = 0.75 * 0.9 + 0.25 * 0.1 / 2
    assert false_hold_rate(0.55, 0.75, 2) == pytest.approx((1 - high) ** 2, rel=1e-12)
    # One answer never reaches it.
    assert false_hold_rate(0.55, 0.75, 1) == 0.0


def test_the_false_hold_rate_refuses_levels_it_cannot_weigh() -> None:
    with pytest.raises(ValueError):
        false_hold_rate(0.8, 0.7, 30)
