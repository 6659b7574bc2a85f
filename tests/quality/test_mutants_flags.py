"""The worker flags (quality/flags.py) at the edges mutmut found unguarded: each flag's threshold
holds at its exact boundary (the minimum number of items, the share, the time, the significance
level), each flag's reason and figures say exactly what fired it, a position outside a pair is
refused in words, a worker's figures count only the votes they are scored on, the chance level and
the p-values are what the binomial law gives (none for no workers, never above 1), and a browser
shared with other participant ids is named with those ids.

Plain pytest, no database."""

import math
from typing import Any

import pytest
from scipy.stats import binomtest

from corpus.labels import LABELS, NO_GOLD
from quality.flags import (
    MANY_IDS,
    RANDOM_GUESSER,
    SAME_LABEL,
    TOO_FAST,
    PairVotes,
    Vote,
    WorkerFigures,
    WorkerFlag,
    better_than_chance_p_value,
    better_than_chance_p_values,
    chance_agreement,
    flag_workers,
    leave_one_out_gold,
    many_ids_flag,
    random_guesser_flags,
    same_label_flags,
    too_fast_flags,
    worker_figures,
)

E, N, C = LABELS


def balanced(worker: str, agreements: int, items: int) -> WorkerFigures:
    """Uniform label habits on balanced gold: chance exactly 1/3."""
    third = items // 3
    thirds = {E: third, N: third, C: third}
    return WorkerFigures(
        worker=worker,
        label_counts=thirds,
        loo_items=items,
        loo_agreements=agreements,
        loo_own_label_counts=thirds,
        loo_gold_counts=thirds,
    )


@pytest.mark.parametrize("index", [-1, 5])
def test_a_position_outside_the_pair_is_refused_in_words(index):
    with pytest.raises(IndexError, match=rf"^index {index} is not one of the 5 labels$"):
        leave_one_out_gold([E, E, E, E, E], index)


def test_the_first_position_is_a_position_of_the_pair():
    assert leave_one_out_gold([N, E, E, E, C], 0) == E


def test_leave_one_out_gold_takes_the_papers_three_votes_unless_told_otherwise():
    assert leave_one_out_gold([E, E, E, N, N], 4) == E
    assert leave_one_out_gold([E, E, E, N, N], 4, min_votes=4) == NO_GOLD
    assert leave_one_out_gold([E, E, E, E, N], 4, min_votes=4) == E


def test_worker_figures_count_only_scored_votes_and_sort_the_workers():
    pairs = [
        PairVotes(
            "p1", (Vote("author", E, 50.0), Vote("zed", E, 3.0), Vote("amy", E, 5.0), Vote("v3", E), Vote("v4", N))
        ),
        PairVotes("p2", (Vote("author", E), Vote("zed", C, 9.0), Vote("amy", N), Vote("v3", N), Vote("v4", C))),
    ]

    figures = worker_figures(pairs)

    assert [worker.worker for worker in figures] == ["amy", "v3", "v4", "zed"]
    zed = figures[3]
    # p1 without zed: E E E N -> E (agrees); p2 without zed: E N N C -> no gold.
    assert zed == WorkerFigures(
        worker="zed",
        label_counts={E: 1, C: 1},
        loo_items=1,
        loo_agreements=1,
        loo_own_label_counts={E: 1},
        loo_gold_counts={E: 1},
        timed_items=2,
        median_seconds=6.0,
    )
    assert figures[2].median_seconds is None and figures[2].timed_items == 0
    # zed's item without gold in p2 leaves the votes after zed's scored all the same.
    assert figures[0].label_counts == {E: 1, N: 1}
    # Three of four agreeing is no gold label when the rule asks for all four.
    strict = {worker.worker: worker for worker in worker_figures(pairs, min_votes=4)}
    assert (strict["zed"].loo_items, strict["zed"].label_counts) == (0, {E: 1, C: 1})


def test_worker_figures_add_up_a_workers_repeated_labels_and_gold_labels():
    pair = (Vote("author", E), Vote("amy", E), Vote("v2", E), Vote("v3", E), Vote("v4", E))

    (amy, *_) = worker_figures([PairVotes("p1", pair), PairVotes("p2", pair)])

    assert (amy.worker, amy.label_counts, amy.loo_own_label_counts, amy.loo_gold_counts) == (
        "amy",
        {E: 2},
        {E: 2},
        {E: 2},
    )
    assert (amy.loo_items, amy.loo_agreements) == (2, 2)


def test_a_workers_figures_say_how_many_labels_and_what_share_agreed():
    worker = WorkerFigures(
        "w",
        label_counts={E: 3, N: 2},
        loo_items=4,
        loo_agreements=3,
        loo_own_label_counts={E: 4},
        loo_gold_counts={E: 1, N: 3},
    )
    assert worker.n_labels == 5
    assert worker.loo_agreement == 0.75
    assert worker.chance_agreement == 0.25
    assert math.isnan(WorkerFigures("none").loo_agreement)


@pytest.mark.parametrize("own, gold", [({}, {E: 2}), ({E: 2}, {}), ({}, {})])
def test_no_chance_level_without_labels_on_both_sides(own, gold):
    assert math.isnan(chance_agreement(own, gold))


def test_a_label_the_gold_never_gives_adds_nothing_to_chance():
    assert chance_agreement({E: 1, N: 3}, {E: 2}) == 0.25


def test_the_p_values_are_the_binomial_tail_from_the_agreements_up_and_none_for_no_workers():
    tested = [(5, 6, 0.5), (0, 4, 0.3), (21, 60, 1 / 3)]

    p_values = better_than_chance_p_values(tested)

    assert p_values == pytest.approx([binomtest(*row, alternative="greater").pvalue for row in tested], abs=1e-12)
    assert p_values[0] == pytest.approx(7 / 64, abs=1e-12)
    assert p_values[1] == 1.0
    assert better_than_chance_p_values([]) == []
    assert better_than_chance_p_value(0, 4, 0.3) == 1.0


def test_a_guesser_flag_says_its_figures_and_reason_exactly():
    (flag,) = random_guesser_flags([balanced("guesser", agreements=10, items=30)])

    p_value = binomtest(10, 30, 1 / 3, alternative="greater").pvalue
    assert (flag.worker, flag.kind) == ("guesser", RANDOM_GUESSER)
    assert flag.reason == (
        "agreement with leave-one-out gold 10/30 = 0.333 is not significantly above chance 0.333 "
        "(one-sided binomial p = 0.568, Benjamini-Hochberg adjusted 0.568 > 0.05 over 1 workers tested)"
    )
    assert flag.figures == pytest.approx(
        {
            "loo_items": 30,
            "loo_agreements": 10,
            "loo_agreement": 1 / 3,
            "chance_agreement": 1 / 3,
            "p_value": p_value,
            "adjusted_p_value": p_value,
            "alpha": 0.05,
            "workers_tested": 1,
        }
    )


def test_a_guesser_is_tested_from_exactly_the_minimum_number_of_items():
    at_minimum = balanced("at", agreements=10, items=30)
    below = balanced("below", agreements=9, items=29)

    assert [flag.worker for flag in random_guesser_flags([at_minimum, below])] == ["at"]
    assert [flag.worker for flag in random_guesser_flags([below], min_items=29)] == ["below"]


def test_a_worker_whose_adjusted_p_value_equals_alpha_is_cleared():
    worker = balanced("w", agreements=15, items=30)
    p_value = binomtest(15, 30, 1 / 3, alternative="greater").pvalue

    assert random_guesser_flags([worker], alpha=p_value) == []
    assert [flag.worker for flag in random_guesser_flags([worker], alpha=p_value * 0.99)] == ["w"]


def test_the_default_significance_level_is_five_percent():
    # p about 0.043: cleared at 0.05, flagged at 0.04.
    worker = balanced("w", agreements=15, items=30)
    assert 0.04 < binomtest(15, 30, 1 / 3, alternative="greater").pvalue < 0.05

    assert random_guesser_flags([worker]) == []
    assert [flag.worker for flag in random_guesser_flags([worker], alpha=0.04)] == ["w"]


def test_no_worker_tested_is_no_flag():
    assert random_guesser_flags([balanced("few", agreements=1, items=3)]) == []


def test_a_same_label_flag_fires_from_exactly_the_share_and_the_minimum_number_of_labels():
    at_share = WorkerFigures("at_share", label_counts={N: 16, E: 2, C: 2})
    below_share = WorkerFigures("below_share", label_counts={N: 15, E: 3, C: 2})
    too_few = WorkerFigures("too_few", label_counts={N: 19})

    # The workers that are not flagged come first: the search goes on past each of them.
    flags = same_label_flags([too_few, below_share, at_share])

    assert [flag.worker for flag in flags] == ["at_share"]
    assert flags[0] == WorkerFlag(
        worker="at_share",
        kind=SAME_LABEL,
        reason="16 of 20 labels (80%) are 'neutral', at or above 80%",
        figures={"items": 20, "top_label_count": 16, "top_label_share": 0.8, "max_label_share": 0.8},
    )
    assert [flag.worker for flag in same_label_flags([too_few], min_items=19)] == ["too_few"]
    assert same_label_flags([at_share], max_label_share=0.81) == []


def test_of_two_labels_given_equally_often_the_flag_names_the_later_alphabetically():
    (flag,) = same_label_flags([WorkerFigures("w", label_counts={E: 10, N: 10})], max_label_share=0.5)

    assert flag.reason == "10 of 20 labels (50%) are 'neutral', at or above 50%"


def test_a_too_fast_flag_fires_from_exactly_the_minimum_number_of_timed_items_and_below_the_time():
    at_minimum = WorkerFigures("at_minimum", timed_items=10, median_seconds=3.96)
    too_few = WorkerFigures("too_few", timed_items=9, median_seconds=1.0)
    at_limit = WorkerFigures("at_limit", timed_items=40, median_seconds=4.0)
    no_median = WorkerFigures("no_median", timed_items=40, median_seconds=None)

    # The workers that are not flagged come first: the search goes on past each of them.
    flags = too_fast_flags([too_few, no_median, at_limit, at_minimum])

    assert flags == [
        WorkerFlag(
            worker="at_minimum",
            kind=TOO_FAST,
            reason="median 4.0 s per item over 10 timed items, below 4.0 s",
            figures={"timed_items": 10, "median_seconds": 3.96, "min_median_seconds": 4.0},
        )
    ]
    assert [flag.worker for flag in too_fast_flags([too_few], min_items=9)] == ["too_few"]
    assert [flag.worker for flag in too_fast_flags([at_limit], min_median_seconds=4.5)] == ["at_limit"]


CARELESS = WorkerFigures(
    "careless",
    label_counts={E: 16, N: 2, C: 2},
    loo_items=30,
    loo_agreements=15,
    loo_own_label_counts={E: 10, N: 10, C: 10},
    loo_gold_counts={E: 10, N: 10, C: 10},
    timed_items=10,
    median_seconds=3.0,
)


def test_flag_workers_gathers_every_flag_at_the_default_thresholds_sorted_by_worker_then_kind():
    other = WorkerFigures("another", timed_items=10, median_seconds=1.0)

    flags = flag_workers([CARELESS, other], guesser_alpha=0.04)

    assert [(flag.worker, flag.kind) for flag in flags] == [
        ("another", TOO_FAST),
        ("careless", RANDOM_GUESSER),
        ("careless", SAME_LABEL),
        ("careless", TOO_FAST),
    ]
    assert flags[1].figures["alpha"] == 0.04


def test_flag_workers_hands_each_threshold_to_its_flag():
    def kinds(**thresholds: Any) -> set[str]:
        return {flag.kind for flag in flag_workers([CARELESS], **thresholds)}

    assert kinds() == {SAME_LABEL, TOO_FAST}
    assert kinds(guesser_alpha=0.04) == {RANDOM_GUESSER, SAME_LABEL, TOO_FAST}
    assert kinds(guesser_alpha=0.04, guesser_min_items=31) == {SAME_LABEL, TOO_FAST}
    assert kinds(max_label_share=0.81) == {TOO_FAST}
    assert kinds(same_label_min_items=21) == {TOO_FAST}
    assert kinds(min_median_seconds=3.0) == {SAME_LABEL}
    assert kinds(too_fast_min_items=11) == {SAME_LABEL}


def test_a_shared_browser_names_the_other_participant_ids_in_order():
    flag = many_ids_flag(7, [12, 3])

    assert flag == WorkerFlag(
        worker=7,
        kind=MANY_IDS,
        reason="Shares a browser with 2 other participant id(s): 3, 12.",
        figures={"linked_ids": 2},
    )
    assert many_ids_flag(7, []) is None
