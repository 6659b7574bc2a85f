"""Worker-quality flags and the leave-one-out gold label, on hand-worked cases and planted workers.

Plain pytest, no database.
"""

import pytest
from scipy.stats import binomtest

from corpus.labels import AUTHOR_POSITION, LABELS, NO_GOLD
from quality.flags import (
    RANDOM_GUESSER,
    SAME_LABEL,
    TOO_FAST,
    PairVotes,
    Vote,
    WorkerFigures,
    better_than_chance_p_value,
    chance_agreement,
    flag_workers,
    leave_one_out_gold,
    random_guesser_flags,
    same_label_flags,
    too_fast_flags,
    worker_figures,
)

E, N, C = LABELS


@pytest.mark.parametrize(
    "labels, position, expected",
    [
        # 3 of the other 4 agree: a leave-one-out gold.
        ([E, E, E, N, C], 3, E),
        ([E, E, E, E, N], 4, E),
        ([C, C, C, N, N], 3, C),
        # Leaving out one of a bare 3-of-5 majority leaves 2 of 4: no gold, though the pair has one.
        ([E, E, E, N, C], 0, NO_GOLD),
        ([C, C, C, N, N], 0, NO_GOLD),
        # The worker's own label never rescues a pair: 2-2 of the others is no gold.
        ([N, N, E, E, N], 4, NO_GOLD),
        # A dissenting worker is scored against the other four's 4-of-4 gold.
        ([N, E, E, E, E], 0, E),
    ],
)
def test_leave_one_out_gold_on_hand_worked_pairs(labels, position, expected):
    assert leave_one_out_gold(labels, position) == expected


def test_leave_one_out_gold_refuses_a_position_outside_the_pair():
    with pytest.raises(IndexError):
        leave_one_out_gold([E, E, E, E, E], 5)


def test_binomial_p_value_matches_scipy_and_the_hand_computed_tail():
    # P(X >= 5) for X ~ Binomial(6, 1/2) = (C(6,5) + C(6,6)) / 2**6 = 7/64.
    assert better_than_chance_p_value(5, 6, 0.5) == pytest.approx(7 / 64, abs=1e-12)
    assert better_than_chance_p_value(5, 6, 0.5) == pytest.approx(binomtest(5, 6, 0.5, alternative="greater").pvalue)
    # P(X >= 3) for X ~ Binomial(3, 1/3) = (1/3)**3.
    assert better_than_chance_p_value(3, 3, 1 / 3) == pytest.approx(1 / 27, abs=1e-12)


def test_chance_agreement_is_sum_of_own_share_times_gold_share():
    # Worker: half E, half N; gold on the same items: 3/4 E, 1/4 C -> 0.5 * 0.75 + 0.5 * 0 = 0.375.
    assert chance_agreement({E: 2, N: 2}, {E: 3, C: 1}) == pytest.approx(0.375)
    # A uniform guesser reaches 1/3 whatever the gold distribution.
    assert chance_agreement({E: 10, N: 10, C: 10}, {E: 70, N: 20, C: 10}) == pytest.approx(1 / 3)
    # Always "entailment" on entailment-heavy gold: chance is the gold's share of entailment.
    assert chance_agreement({E: 50}, {E: 30, N: 10, C: 10}) == pytest.approx(0.6)


def test_worker_figures_score_validators_against_the_other_four_and_skip_the_author():
    pairs = [
        PairVotes(
            "p1", (Vote("author", E), Vote("v1", E, 10.0), Vote("v2", E, 20.0), Vote("v3", N, 2.0), Vote("v4", E, 8.0))
        ),
        PairVotes(
            "p2", (Vote("author", C), Vote("v1", N, 30.0), Vote("v2", C, 4.0), Vote("v3", C, 3.0), Vote("v4", N, None))
        ),
    ]
    figures = {worker.worker: worker for worker in worker_figures(pairs)}
    assert "author" not in figures
    v1 = figures["v1"]
    # p1 without v1: E E N E -> E (agrees). p2 without v1: C C C N -> C (v1 said N).
    assert (v1.loo_items, v1.loo_agreements) == (2, 1)
    assert v1.label_counts == {E: 1, N: 1}
    assert v1.loo_gold_counts == {E: 1, C: 1}
    assert (v1.timed_items, v1.median_seconds) == (2, 20.0)
    v3 = figures["v3"]
    # p1 without v3: E E E E -> E (v3 said N). p2 without v3: C N C N -> no gold, not scored.
    assert (v3.loo_items, v3.loo_agreements) == (1, 0)
    assert figures["v4"].timed_items == 1
    with_author = {worker.worker: worker for worker in worker_figures(pairs, include_author_votes=True)}
    # p1 without the author: E E N E -> E; p2: N C C N -> no gold.
    assert (with_author["author"].loo_items, with_author["author"].loo_agreements) == (1, 1)
    assert with_author["author"].median_seconds is None


def test_the_vote_left_out_as_the_authors_is_the_one_at_the_corpus_authors_position():
    """The flags read positions as the label table writes them (`corpus.labels.AUTHOR_POSITION`):
    a pair's votes are numbered from the author's position, and the vote skipped is the one there."""
    pair = PairVotes("p1", (Vote("author", E), Vote("v1", E), Vote("v2", E), Vote("v3", N), Vote("v4", E)))
    positions = dict(pair.positioned())
    assert sorted(positions) == list(range(AUTHOR_POSITION, AUTHOR_POSITION + 5))
    assert positions[AUTHOR_POSITION].worker == "author"
    scored = {figures.worker for figures in worker_figures([pair])}
    assert scored == {"v1", "v2", "v3", "v4"}


def guesser_figures(worker: str, agreements: int, items: int = 60) -> WorkerFigures:
    """A worker with uniform label habits on balanced gold (chance exactly 1/3), `agreements` of `items`."""
    third = items // 3
    return WorkerFigures(
        worker=worker,
        label_counts={E: third, N: third, C: third},
        loo_items=items,
        loo_agreements=agreements,
        loo_own_label_counts={E: third, N: third, C: third},
        loo_gold_counts={E: third, N: third, C: third},
    )


def test_random_guesser_flag_fires_on_a_planted_guesser_and_not_on_an_honest_worker():
    honest = guesser_figures("honest", agreements=48)
    guesser = guesser_figures("guesser", agreements=21)
    flags = random_guesser_flags([honest, guesser])
    assert [flag.worker for flag in flags] == ["guesser"]
    flag = flags[0]
    assert flag.kind == RANDOM_GUESSER
    assert "not significantly above chance" in flag.reason
    assert flag.figures["loo_agreements"] == 21
    assert flag.figures["chance_agreement"] == pytest.approx(1 / 3)
    assert flag.figures["p_value"] == pytest.approx(binomtest(21, 60, 1 / 3, alternative="greater").pvalue)


def test_random_guesser_needs_a_minimum_number_of_items():
    few = guesser_figures("few", agreements=7, items=21)
    assert random_guesser_flags([few], min_items=30) == []
    assert [flag.worker for flag in random_guesser_flags([few], min_items=20)] == ["few"]


def test_random_guesser_chance_accounts_for_unbalanced_gold():
    # Always "entailment" where 60% of the gold is entailment: 36 of 60 is well above 1/3, and
    # exactly what the habit alone yields.
    habit = WorkerFigures(
        worker="always_entailment",
        label_counts={E: 60},
        loo_items=60,
        loo_agreements=36,
        loo_own_label_counts={E: 60},
        loo_gold_counts={E: 36, N: 12, C: 12},
    )
    assert binomtest(36, 60, 1 / 3, alternative="greater").pvalue < 1e-4
    assert [flag.worker for flag in random_guesser_flags([habit])] == ["always_entailment"]


def test_random_guesser_corrects_for_testing_many_workers():
    # 28 of 60 against chance 1/3: one-sided p = 0.022, clear on its own at alpha 0.05 ...
    borderline = guesser_figures("borderline", agreements=28)
    assert random_guesser_flags([borderline]) == []
    # ... but not when tested together with ten guessers (Benjamini-Hochberg adjusted p = 0.24).
    crowd = [borderline] + [guesser_figures(f"guesser{index}", agreements=20) for index in range(10)]
    flagged = {flag.worker: flag for flag in random_guesser_flags(crowd)}
    assert "borderline" in flagged
    assert flagged["borderline"].figures["adjusted_p_value"] == pytest.approx(0.0219 * 11, abs=1e-3)
    assert flagged["borderline"].figures["workers_tested"] == 11


def test_same_label_flag_fires_on_a_planted_worker_and_not_on_an_honest_one():
    stuck = WorkerFigures("stuck", label_counts={N: 45, E: 3, C: 2})
    honest = WorkerFigures("honest", label_counts={E: 20, N: 15, C: 15})
    too_few = WorkerFigures("too_few", label_counts={N: 10})
    flags = same_label_flags([stuck, honest, too_few])
    assert [flag.worker for flag in flags] == ["stuck"]
    assert flags[0].kind == SAME_LABEL
    assert "'neutral'" in flags[0].reason
    assert flags[0].figures["top_label_share"] == pytest.approx(0.9)


def test_too_fast_flag_fires_on_a_planted_worker_and_not_on_an_honest_one():
    fast = WorkerFigures("fast", timed_items=40, median_seconds=1.8)
    reader = WorkerFigures("reader", timed_items=40, median_seconds=11.0)
    untimed = WorkerFigures("untimed", timed_items=0, median_seconds=None)
    barely_timed = WorkerFigures("barely_timed", timed_items=3, median_seconds=1.0)
    flags = too_fast_flags([fast, reader, untimed, barely_timed])
    assert [flag.worker for flag in flags] == ["fast"]
    assert flags[0].kind == TOO_FAST
    assert "1.8 s" in flags[0].reason
    assert flags[0].figures["median_seconds"] == 1.8


def test_flag_workers_gathers_every_flag_with_reason_and_figures():
    careless = WorkerFigures(
        "careless",
        label_counts={E: 60},
        loo_items=60,
        loo_agreements=20,
        loo_own_label_counts={E: 60},
        loo_gold_counts={E: 20, N: 20, C: 20},
        timed_items=60,
        median_seconds=1.0,
    )
    honest = WorkerFigures(
        "honest",
        label_counts={E: 20, N: 20, C: 20},
        loo_items=60,
        loo_agreements=52,
        loo_own_label_counts={E: 20, N: 20, C: 20},
        loo_gold_counts={E: 20, N: 20, C: 20},
        timed_items=60,
        median_seconds=12.0,
    )
    flags = flag_workers([careless, honest])
    assert [(flag.worker, flag.kind) for flag in flags] == [
        ("careless", RANDOM_GUESSER),
        ("careless", SAME_LABEL),
        ("careless", TOO_FAST),
    ]
    assert all(flag.reason and flag.figures for flag in flags)
    # Thresholds are named arguments: with a lower time limit the same worker is not too fast.
    assert TOO_FAST not in {flag.kind for flag in flag_workers([careless], min_median_seconds=0.5)}


def test_too_fast_reads_the_median_so_one_long_break_does_not_hide_clicking_through():
    pairs = [
        PairVotes(
            f"p{index}",
            (
                Vote("author", E),
                Vote("clicker", E, 900.0 if index == 0 else 1.0),
                Vote("v2", E, 9.0),
                Vote("v3", E, 9.0),
                Vote("v4", E, 9.0),
            ),
        )
        for index in range(12)
    ]
    figures = worker_figures(pairs)
    clicker = next(worker for worker in figures if worker.worker == "clicker")
    assert clicker.median_seconds == 1.0  # the mean would be 76 s
    assert [flag.worker for flag in too_fast_flags(figures)] == ["clicker"]
