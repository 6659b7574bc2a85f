"""How correlated-error groups are found and what they put at risk, on small synthetic label tables
(docs/checks.md, "library mutants"): the three stages against the same rules worked by hand (the
pair test with its calibration, Bonferroni level, minimum overlap, co-errors and effect size; the
clique stage's bound C(n, k) * level ** C(k, 2); the shared-errors stage's seeds, pooled rate and
per-seed test), each stage's edges at their exact thresholds, careful workers who agree only on
right labels never grouped, and the gold that rests on a group: which tasks, which group, and the
reason each one is sent with."""

import random
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from corpus.labels import NO_GOLD
from quality import correlated
from quality.aggregation import dawid_skene
from quality.correlated import CorrelatedCheck, CorrelatedGroup, PairEvidence

E, N, C = "entailment", "neutral", "contradiction"
LABELS = (E, N, C)
Rows = list[tuple[str, str, str]]
Edge = tuple[str, str, int, int, float, int, float, str]


def table(rows: Rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def bots_and_honest(
    seed: int,
    tasks: int = 40,
    honest: int = 6,
    per_task: int = 4,
    bots: int = 2,
    bot_rate: float = 1.0,
    rule_right: float = 0.5,
    slip: float = 0.0,
) -> Rows:
    """Honest workers (80% right, else a random label), `per_task` of them a task; each bot labels a
    task with chance `bot_rate`, with the bots' one rule (right with chance `rule_right`) except
    with chance `slip` (a random label)."""
    rng = random.Random(seed)
    rows = []
    for number in range(tasks):
        truth = rng.choice(LABELS)
        rule = truth if rng.random() < rule_right else rng.choice([label for label in LABELS if label != truth])
        for worker in rng.sample([f"h{index}" for index in range(honest)], per_task):
            rows.append((f"t{number}", worker, truth if rng.random() < 0.8 else rng.choice(LABELS)))
        for bot in range(bots):
            if rng.random() < bot_rate:
                rows.append((f"t{number}", f"b{bot}", rng.choice(LABELS) if slip and rng.random() < slip else rule))
    return rows


def crowd_of_bots(seed: int, tasks: int = 60, honest: int = 6, bots: int = 4, slip: float = 0.0) -> Rows:
    """Five workers a task drawn from honest workers and bots alike: two bots share few tasks. A bot
    gives the rule's label, or a random one with chance `slip`."""
    rng = random.Random(seed)
    workers = [f"h{index}" for index in range(honest)] + [f"b{index}" for index in range(bots)]
    rows = []
    for number in range(tasks):
        truth = rng.choice(LABELS)
        rule = truth if rng.random() < 0.5 else rng.choice([label for label in LABELS if label != truth])
        for worker in rng.sample(workers, 5):
            if worker.startswith("b"):
                label = rng.choice(LABELS) if slip and rng.random() < slip else rule
            else:
                label = truth if rng.random() < 0.8 else rng.choice(LABELS)
            rows.append((f"t{number}", worker, label))
    return rows


def by_hand(
    rows: Rows, min_shared: int, alpha: float = 0.01, min_co_errors: int = 3, max_ratio: float = 0.25
) -> tuple[int, float, list[Edge]]:
    """`find_correlated_groups` worked pair by pair from `pair_statistics`: tested pairs, the
    calibration, and each linked pair with its evidence and stage."""
    data = table(rows)
    per_pair = correlated.pair_statistics(data)
    pairs = per_pair.to_dict("records")
    n_tested = sum(pair["shared"] >= min_shared for pair in pairs)

    def tested(pair: dict) -> bool:
        return bool(pair["shared"] >= min_shared and pair["co_errors"] >= min_co_errors)

    def p_value(pair: dict, calibration: float) -> float:
        return float(stats.poisson.cdf(pair["disagreements"], max(calibration * pair["expected_disagreements"], 1e-12)))

    def few(pair: dict, calibration: float) -> bool:
        return bool(pair["disagreements"] <= max_ratio * calibration * pair["expected_disagreements"])

    def by_pair_test(pair: dict, calibration: float) -> bool:
        return tested(pair) and p_value(pair, calibration) <= alpha / max(1, n_tested) and few(pair, calibration)

    calibration = 1.0
    for _ in range(correlated.CALIBRATION_ROUNDS):
        suspects = {
            pair[side] for pair in pairs if by_pair_test(pair, calibration) for side in ("worker_a", "worker_b")
        }
        clean = [pair for pair in pairs if pair["worker_a"] not in suspects and pair["worker_b"] not in suspects]
        total = sum(pair["expected_disagreements"] for pair in clean)
        observed = sum(pair["disagreements"] for pair in clean)
        updated = max(correlated.MIN_CALIBRATION, observed / total) if total > 0 else 1.0
        settled = abs(updated - calibration) < 1e-3
        calibration = updated
        if settled:
            break

    tested_workers = {pair[side] for pair in pairs if tested(pair) for side in ("worker_a", "worker_b")}
    in_clique: set[tuple[str, str]] = set()
    for level in correlated.CLIQUE_LEVELS:
        links = {
            (pair["worker_a"], pair["worker_b"])
            for pair in pairs
            if tested(pair) and few(pair, calibration) and p_value(pair, calibration) <= level
        }
        nodes = sorted({worker for link in links for worker in link})
        for size in range(3, len(nodes) + 1):
            for clique in combinations(nodes, size):
                if not all((a, b) in links or (b, a) in links for a, b in combinations(clique, 2)):
                    continue
                if comb(len(tested_workers), size) * level ** comb(size, 2) <= alpha / len(correlated.CLIQUE_LEVELS):
                    in_clique |= {(a, b) for a in clique for b in clique}
    shared = correlated.shared_error_links(data, per_pair, alpha)
    by_shared_errors = set(zip(per_pair["worker_a"][shared], per_pair["worker_b"][shared], strict=True))

    edges = []
    for pair in pairs:
        key = (pair["worker_a"], pair["worker_b"])
        if by_pair_test(pair, calibration):
            stage = correlated.PAIR_TEST
        elif key in in_clique:
            stage = correlated.CLIQUE_TEST
        elif key in by_shared_errors:
            stage = correlated.SHARED_ERRORS
        else:
            continue
        edges.append(
            (
                key[0],
                key[1],
                int(pair["shared"]),
                int(pair["disagreements"]),
                float(pair["expected_disagreements"]) * calibration,
                int(pair["co_errors"]),
                p_value(pair, calibration),
                stage,
            )
        )
    return n_tested, calibration, edges


def evidence(edge: PairEvidence) -> Edge:
    return (
        edge.worker_a,
        edge.worker_b,
        edge.shared,
        edge.disagreements,
        edge.expected_disagreements,
        edge.co_errors,
        edge.p_value,
        edge.linked_by,
    )


def assert_as_by_hand(rows: Rows, min_shared: int | None = None, **settings: float) -> CorrelatedCheck:
    check = correlated.find_correlated_groups(table(rows), min_shared=min_shared, **settings)  # type: ignore[arg-type]
    scaled = correlated.scaled_min_shared(table(rows)) if min_shared is None else min_shared
    n_tested, calibration, edges = by_hand(rows, scaled, **settings)  # type: ignore[arg-type]
    assert check.tested_pairs == n_tested
    assert check.calibration == pytest.approx(calibration, rel=1e-12)
    assert check.alpha == settings.get("alpha", correlated.ALPHA)
    found = [evidence(edge) for edge in check.flagged_pairs]
    # The figures exactly, the floats (sums in another order) to 1e-12.
    assert [edge[:4] + edge[5:6] + edge[7:] for edge in found] == [edge[:4] + edge[5:6] + edge[7:] for edge in edges]
    assert [(edge[4], edge[6]) for edge in found] == [pytest.approx((edge[4], edge[6]), rel=1e-12) for edge in edges]
    assert check.groups == correlated._components(check.flagged_pairs)
    return check


def stages(check: CorrelatedCheck) -> dict[tuple[str, str], str]:
    return {(edge.worker_a, edge.worker_b): edge.linked_by for edge in check.flagged_pairs}


# --- the pair test -----------------------------------------------------------------------------------


def test_two_bots_sharing_one_rule_are_linked_by_the_pair_test_and_honest_workers_are_not():
    rows = bots_and_honest(seed=0)
    check = assert_as_by_hand(rows)
    assert stages(check) == {("b0", "b1"): correlated.PAIR_TEST}
    assert [group.members for group in check.groups] == [("b0", "b1")]
    assert 0.1 < check.calibration < 1.0
    for seed in (1, 2, 3):
        assert stages(assert_as_by_hand(bots_and_honest(seed=seed))) == {("b0", "b1"): correlated.PAIR_TEST}


def test_the_calibration_is_re_estimated_without_the_linked_workers_until_it_settles():
    # Several seeds and levels, each worked by hand: calibration, tested pairs and every edge.
    for seed in range(4):
        rows = bots_and_honest(seed=seed, tasks=30, honest=5)
        assert_as_by_hand(rows)
        assert_as_by_hand(rows, alpha=0.05)
        assert_as_by_hand(rows, min_shared=4, alpha=0.2, max_ratio=0.5)


def test_careful_workers_who_agree_only_on_right_labels_form_no_group():
    # Two workers always right (the rule is the truth) never disagree, and share no wrong label.
    rows = bots_and_honest(seed=0, rule_right=1.0)
    careful = correlated.pair_statistics(table(rows)).set_index(["worker_a", "worker_b"]).loc[("b0", "b1")]
    assert (careful["disagreements"], careful["co_errors"]) == (0, 0)
    check = assert_as_by_hand(rows)
    assert check.groups == () and check.flagged_pairs == ()
    # Two who are right 95% of the time never disagree over 80 tasks, far fewer than predicted, but
    # share only two wrong labels: no group; only a minimum of two co-errors would link them.
    rows = bots_and_honest(seed=0, tasks=80, rule_right=0.95)
    pair = correlated.pair_statistics(table(rows)).set_index(["worker_a", "worker_b"]).loc[("b0", "b1")]
    assert (pair["disagreements"], pair["co_errors"]) == (0, 2)
    assert assert_as_by_hand(rows).groups == ()
    assert stages(assert_as_by_hand(rows, min_co_errors=2)) == {("b0", "b1"): correlated.PAIR_TEST}


def test_a_pair_is_tested_from_exactly_min_shared_tasks_and_exactly_min_co_errors():
    rows = bots_and_honest(seed=0)
    bots = correlated.pair_statistics(table(rows)).set_index(["worker_a", "worker_b"]).loc[("b0", "b1")]
    shared, co_errors = int(bots["shared"]), int(bots["co_errors"])
    at = assert_as_by_hand(rows, min_shared=shared, min_co_errors=co_errors)
    assert stages(at) == {("b0", "b1"): correlated.PAIR_TEST}
    assert at.tested_pairs == 1  # no other pair shares as many scored tasks
    # One more of either and the pair is not tested (the shared-errors stage still links it).
    by_shared_errors = {("b0", "b1"): correlated.SHARED_ERRORS}
    assert stages(assert_as_by_hand(rows, min_shared=shared + 1, min_co_errors=co_errors)) == by_shared_errors
    assert stages(assert_as_by_hand(rows, min_shared=shared, min_co_errors=co_errors + 1)) == by_shared_errors
    # min_shared None is the table's scaled minimum, and a given one is used as given.
    scaled = correlated.scaled_min_shared(table(rows))
    default = correlated.find_correlated_groups(table(rows))
    assert default.tested_pairs == correlated.find_correlated_groups(table(rows), min_shared=scaled).tested_pairs
    assert correlated.find_correlated_groups(table(rows), min_shared=1).tested_pairs > default.tested_pairs


def test_a_pair_exactly_at_the_corrected_level_is_linked_and_one_just_above_is_not():
    # Bots right 70% of the time: the calibration without them is the higher one, so a pair
    # dropped in any round would leave it lower.
    rows = bots_and_honest(seed=0, rule_right=0.7)
    check = correlated.find_correlated_groups(table(rows))
    (edge,) = check.flagged_pairs
    alpha = edge.p_value * check.tested_pairs
    while alpha / check.tested_pairs > edge.p_value:
        alpha = float(np.nextafter(alpha, 0.0))
    while alpha / check.tested_pairs < edge.p_value:
        alpha = float(np.nextafter(alpha, 1.0))
    assert alpha / check.tested_pairs == edge.p_value
    at = assert_as_by_hand(rows, alpha=alpha)
    assert at.calibration == check.calibration
    assert stages(at) == {("b0", "b1"): correlated.PAIR_TEST}
    below = float(np.nextafter(alpha, 0.0))
    assert correlated.PAIR_TEST not in stages(assert_as_by_hand(rows, alpha=below)).values()
    # With one pair tested the level is alpha itself: at 1.5 times the pair's p-value it is linked.
    bots = correlated.pair_statistics(table(rows)).set_index(["worker_a", "worker_b"]).loc[("b0", "b1")]
    shared, co_errors = int(bots["shared"]), int(bots["co_errors"])
    alone = assert_as_by_hand(rows, min_shared=shared, min_co_errors=co_errors)
    assert alone.tested_pairs == 1
    p_value = alone.flagged_pairs[0].p_value
    at_half = assert_as_by_hand(rows, min_shared=shared, min_co_errors=co_errors, alpha=1.5 * p_value)
    assert stages(at_half) == {("b0", "b1"): correlated.PAIR_TEST}
    assert at_half.calibration == alone.calibration


def test_bots_that_slip_now_and_then_are_linked_while_they_disagree_at_most_a_quarter_as_predicted():
    rows = bots_and_honest(seed=1, slip=0.1)
    check = assert_as_by_hand(rows)
    (edge,) = check.flagged_pairs
    assert (edge.worker_a, edge.worker_b, edge.disagreements, edge.linked_by) == ("b0", "b1", 2, correlated.PAIR_TEST)
    assert 0.25 * edge.expected_disagreements >= 2 and 0.1 * edge.expected_disagreements < 2
    assert correlated.PAIR_TEST not in stages(assert_as_by_hand(rows, max_ratio=0.1)).values()
    assert_as_by_hand(rows, alpha=0.2)
    assert_as_by_hand(rows, max_ratio=0.5)


def test_an_effect_size_of_zero_links_only_pairs_that_never_disagree():
    rows = bots_and_honest(seed=0)
    check = assert_as_by_hand(rows, max_ratio=0.0)
    assert stages(check) == {("b0", "b1"): correlated.PAIR_TEST}
    assert check.flagged_pairs[0].disagreements == 0


def two_rings(tasks: int = 40) -> Rows:
    """Two rings of three ids, each ring giving its own rule's label on every task: nobody else."""
    rng = random.Random(0)
    rows = []
    for number in range(tasks):
        first, second = rng.choice(LABELS), rng.choice(LABELS)
        rows += [(f"t{number}", worker, first) for worker in ("a0", "a1", "a2")]
        rows += [(f"t{number}", worker, second) for worker in ("b0", "b1", "b2")]
    return rows


def test_with_every_worker_linked_the_prediction_stands_and_one_honest_pair_calibrates_alone():
    rows = two_rings()
    check = assert_as_by_hand(rows)
    assert [group.members for group in check.groups] == [("a0", "a1", "a2"), ("b0", "b1", "b2")]
    assert set(stages(check).values()) == {correlated.PAIR_TEST}
    assert check.calibration == 1.0  # no pair without a linked worker: nothing to calibrate on
    # Two honest workers sharing one scored task (one disagreement) are the only clean pair.
    rows += [("x", "h0", E), ("x", "h1", N), ("x", "a0", E), ("x", "b0", E), ("x", "a1", E)]
    honest = correlated.pair_statistics(table(rows)).set_index(["worker_a", "worker_b"]).loc[("h0", "h1")]
    assert (honest["shared"], honest["disagreements"]) == (1, 1) and honest["expected_disagreements"] < 1
    check = assert_as_by_hand(rows)
    assert check.calibration == 1 / honest["expected_disagreements"]
    assert [group.members for group in check.groups] == [("a0", "a1", "a2"), ("b0", "b1", "b2")]


# --- the clique stage ----------------------------------------------------------------------------------


def test_bots_that_share_too_few_tasks_for_the_pair_test_are_linked_as_a_clique():
    check = assert_as_by_hand(crowd_of_bots(seed=0))
    assert stages(check) == {
        ("b1", "b2"): correlated.CLIQUE_TEST,
        ("b1", "b3"): correlated.CLIQUE_TEST,
        ("b2", "b3"): correlated.CLIQUE_TEST,
    }
    assert [group.members for group in check.groups] == [("b1", "b2", "b3")]
    # Only tested pairs (here: six co-errors) with few enough disagreements (here: none) are edges.
    assert_as_by_hand(crowd_of_bots(seed=0), min_co_errors=6)
    assert_as_by_hand(crowd_of_bots(seed=0), max_ratio=0.0)
    for seed in (1, 2, 3):
        assert_as_by_hand(crowd_of_bots(seed=seed))
        assert_as_by_hand(crowd_of_bots(seed=seed), alpha=0.5, max_ratio=0.5)


def test_a_pair_in_a_clique_that_also_passes_the_pair_test_is_shown_as_the_pair_tests():
    # Bots that slip now and then: one pair passes the pair test, the others only as a clique, some
    # of them with a disagreement or two.
    check = assert_as_by_hand(crowd_of_bots(seed=1, tasks=100, slip=0.05))
    assert stages(check) == {
        ("b1", "b2"): correlated.PAIR_TEST,
        ("b1", "b3"): correlated.CLIQUE_TEST,
        ("b0", "b2"): correlated.CLIQUE_TEST,
        ("b0", "b3"): correlated.CLIQUE_TEST,
        ("b2", "b3"): correlated.CLIQUE_TEST,
    }
    assert [edge.disagreements for edge in check.flagged_pairs] == [0, 1, 2, 1, 1]
    assert [group.members for group in check.groups] == [("b0", "b1", "b2", "b3")]


def cliques_of(
    links: dict[tuple[str, str], float],
    workers: int,
    alpha: float = 0.01,
    candidates: set[tuple[str, str]] | None = None,
) -> set[tuple[str, str]]:
    """The pairs `_significant_cliques` keeps among `links` (pair -> p-value, all candidates unless named)."""
    per_pair = pd.DataFrame(list(links), columns=["worker_a", "worker_b"])
    p_values = np.array(list(links.values()), dtype=float)
    chosen = np.array([candidates is None or pair in candidates for pair in links], dtype=bool)
    kept = correlated._significant_cliques(per_pair, p_values, chosen, workers, alpha)
    assert kept.dtype == bool and len(kept) == len(links)
    return {pair for pair, keep in zip(links, kept, strict=True) if keep}


def triangle(a: str, b: str, c: str, p_value: float) -> dict[tuple[str, str], float]:
    return {(a, b): p_value, (b, c): p_value, (a, c): p_value}


def test_a_clique_is_kept_when_so_many_cliques_of_its_size_are_unlikely_among_the_tested_workers():
    # Three workers at p <= 0.01: C(n, 3) * 0.01 ** 3 <= 0.01 / 2 up to n = 32 (4960), not at 33 (5456).
    links = triangle("a", "b", "c", 0.01)
    assert comb(32, 3) * 0.01**3 <= 0.005 < comb(33, 3) * 0.01**3
    assert cliques_of(links, workers=32) == set(links)
    assert cliques_of(links, workers=33) == set()
    # Only candidate pairs (few enough disagreements) count as edges of a clique.
    assert cliques_of(links, workers=32, candidates={("a", "b"), ("b", "c")}) == set()
    # The bound is half the family-wise level: at alpha 0.008, n = 29 (3654) passes, 30 (4060) not.
    assert cliques_of(links, workers=29, alpha=0.008) == set(links)
    assert cliques_of(links, workers=30, alpha=0.008) == set()


def test_a_clique_exactly_at_the_bound_is_kept():
    # log(C(32, 3) * 0.01 ** 3) as the stage computes it, and an alpha whose half has exactly that log.
    log_bound = special.gammaln(33) - special.gammaln(4) - special.gammaln(30) + 3 * np.log(0.01)
    alpha = float(2 * np.exp(log_bound))
    while np.log(alpha / 2) != log_bound:
        alpha = float(np.nextafter(alpha, 1.0 if np.log(alpha / 2) < log_bound else 0.0))
    links = triangle("a", "b", "c", 0.01)
    assert cliques_of(links, workers=32, alpha=alpha) == set(links)
    assert cliques_of(links, workers=32, alpha=0.0099) == set()


def test_the_stricter_level_keeps_a_clique_among_more_workers():
    # p <= 0.001: C(n, 3) * 1e-9 <= 0.005 up to n = 311; at 0.002 only the 0.01 level applies.
    assert comb(311, 3) * 1e-9 <= 0.005 < comb(312, 3) * 1e-9
    assert cliques_of(triangle("a", "b", "c", 0.001), workers=311) == set(triangle("a", "b", "c", 0.001))
    assert cliques_of(triangle("a", "b", "c", 0.001), workers=312) == set()
    assert cliques_of(triangle("a", "b", "c", 0.002), workers=40) == set()
    # Four workers at 0.01: C(n, 4) * 0.01 ** 6 <= 0.005 up to n = 590.
    four = dict.fromkeys(combinations("defg", 2), 0.01)
    assert comb(590, 4) * 1e-12 <= 0.005 < comb(591, 4) * 1e-12
    assert cliques_of(four, workers=590) == set(four)
    assert cliques_of(four, workers=591) == set()


def kept_by_every_subset(links: dict[tuple[str, str], float], workers: int, alpha: float) -> set[tuple[str, str]]:
    kept: set[tuple[str, str]] = set()
    for level in correlated.CLIQUE_LEVELS:
        edges = {pair for pair, p_value in links.items() if p_value <= level}
        nodes = sorted({worker for pair in edges for worker in pair})
        for size in range(3, len(nodes) + 1):
            for clique in combinations(nodes, size):
                joined = all((a, b) in edges or (b, a) in edges for a, b in combinations(clique, 2))
                if joined and comb(workers, size) * level ** comb(size, 2) <= alpha / len(correlated.CLIQUE_LEVELS):
                    kept |= {pair for pair in edges if set(pair) <= set(clique)}
    return kept


def test_the_kept_pairs_are_those_of_every_clique_within_the_bound_on_small_graphs():
    rng = random.Random(7)
    for _ in range(60):
        nodes = [chr(ord("a") + index) for index in range(rng.randint(3, 7))]
        links = {
            (a, b) if rng.random() < 0.5 else (b, a): rng.choice([0.0005, 0.005, 0.05])
            for a, b in combinations(nodes, 2)
            if rng.random() < 0.7
        }
        workers = rng.randint(len(nodes), 60)
        assert cliques_of(links, workers) == kept_by_every_subset(links, workers, 0.01)


def test_a_pair_alone_is_no_clique_and_a_clique_too_small_does_not_stop_the_next():
    # The lone pair (a, b) comes first, then the triangle: each is judged on its own.
    links = {("a", "b"): 1e-6, **triangle("c", "d", "e", 0.01)}
    assert cliques_of(links, workers=10) == set(triangle("c", "d", "e", 0.01))
    # Among 300 workers a triangle at 0.01 is not enough (C(300, 3) * 1e-6 > 0.005) but four
    # workers are (C(300, 4) * 1e-12); the triangle, first, does not stop the four.
    four = {(b, a): 0.005 for a, b in combinations("defg", 2)}  # stored with the later name first
    links = {**triangle("a", "b", "c", 0.005), **four}
    assert cliques_of(links, workers=300) == set(four)
    assert cliques_of({}, workers=5) == set()


# --- the shared-errors stage ---------------------------------------------------------------------------


def test_bots_each_labelling_little_are_linked_by_their_shared_errors_at_the_callers_alpha():
    rows = bots_and_honest(seed=3, bots=4, bot_rate=0.4)
    check = assert_as_by_hand(rows)
    assert stages(check) == {
        ("b1", "b2"): correlated.SHARED_ERRORS,
        ("b1", "b3"): correlated.SHARED_ERRORS,
        ("b2", "b3"): correlated.SHARED_ERRORS,
    }
    # Two bots sharing two tasks: an expectation under one disagreement, and its p-value as such.
    assert [edge.shared for edge in check.flagged_pairs] == [4, 3, 2]
    assert check.flagged_pairs[2].expected_disagreements < 1
    assert assert_as_by_hand(rows, alpha=1e-6).groups == ()
    assert stages(assert_as_by_hand(bots_and_honest(seed=1, bots=4, bot_rate=0.4))) == {
        ("b2", "b0"): correlated.SHARED_ERRORS,
        ("b2", "b3"): correlated.SHARED_ERRORS,
        ("b0", "b3"): correlated.SHARED_ERRORS,
    }


HONEST = ("h1", "h2", "h3", "h4", "h5")


def labels_with_seeds(seeds: list[str], rounds: int = 2, extra_tasks: int = 0) -> pd.DataFrame:
    """Five honest workers right on every task; the seeds wrong together, two a task, every pair of
    seeds `rounds` times (so each is wrong far more often than the pooled agreement allows)."""
    rows = []
    pairs = list(combinations(seeds, 2)) * rounds
    for number, pair in enumerate(pairs):
        rows += [(f"t{number}", worker, E) for worker in HONEST]
        rows += [(f"t{number}", seed, N) for seed in pair]
    for number in range(extra_tasks):
        rows += [(f"x{number}", worker, E) for worker in HONEST]
    return table(rows)


def pair_counts(counts: dict[tuple[str, str], tuple[int, int]]) -> pd.DataFrame:
    """A `pair_statistics` table reduced to what the stage reads: pair -> (error events, co-errors)."""
    return pd.DataFrame(
        [(a, b, events, co_errors) for (a, b), (events, co_errors) in counts.items()],
        columns=["worker_a", "worker_b", "error_events", "co_errors"],
    )


def shared_links(data: pd.DataFrame, counts: dict[tuple[str, str], tuple[int, int]], alpha: float = 0.01) -> set:
    per_pair = pair_counts(counts)
    linked = correlated.shared_error_links(data, per_pair, alpha)
    assert linked.dtype == bool and len(linked) == len(per_pair)
    return {pair for pair, link in zip(counts, linked, strict=True) if link}


def test_seeds_that_share_errors_beyond_the_others_rate_are_linked_pair_by_pair():
    data = labels_with_seeds(["s1", "s2", "s3", "s4", "s5", "s6"])
    counts = {
        ("h1", "h2"): (100, 10),  # outside the seeds: errors shared at q0 = 0.1
        ("s1", "s2"): (20, 12),
        ("s3", "s1"): (20, 10),
        ("s2", "s3"): (10, 0),  # both kept, but no error in common: no link
        ("s1", "s4"): (2, 2),
        ("s2", "s4"): (1, 1),  # s4: 3 co-errors in 3 events, the least a seed is kept with
        ("s5", "s1"): (20, 5),  # s5: 5 of 20, P(>= 5 | 0.1) = 0.043
        ("s6", "s1"): (20, 4),  # s6: 4 of 20, P(>= 4 | 0.1) = 0.133: not kept
        ("s1", "h3"): (30, 20),  # an honest worker is never linked
    }
    assert stats.binom.sf(4, 20, 0.1) <= correlated.SEED_LEVEL < stats.binom.sf(3, 20, 0.1)
    assert shared_links(data, counts) == {("s1", "s2"), ("s3", "s1"), ("s1", "s4"), ("s2", "s4"), ("s5", "s1")}


def test_two_seeds_are_enough_and_one_is_not():
    counts = {("h1", "h2"): (100, 10), ("s1", "s2"): (20, 12)}
    assert shared_links(labels_with_seeds(["s1", "s2"], rounds=4), counts) == {("s1", "s2")}
    one = labels_with_seeds(["s1", "s2"], rounds=4)
    one = one[one["worker"] != "s2"]
    assert shared_links(one, counts) == set()


def test_workers_who_agree_with_the_others_as_often_as_everyone_are_no_seeds():
    # The same counts over honest workers only: nobody is a seed, nothing is linked.
    counts = {("h1", "h2"): (100, 10), ("h3", "h4"): (20, 12)}
    assert shared_links(labels_with_seeds(["s1", "s2"], rounds=4), counts) == set()
    # Labels nobody can be scored on (no task with a majority of the others): no seeds either.
    unscored = table([("t1", "s1", N), ("t1", "s2", E), ("t2", "s1", E), ("t2", "s2", N)])
    assert shared_links(unscored, {("s1", "s2"): (20, 12)}) == set()


def test_a_worker_wrong_on_their_only_scored_label_is_a_seed_when_agreement_is_high():
    rows = [(f"t{number}", worker, E) for number in range(40) for worker in HONEST]
    rows += [(f"t{number}", "x", N) for number in range(5)] + [("t10", "w", N)]
    data = table(rows)
    agreement = correlated.worker_agreement(data)
    assert agreement.loc["w"].tolist() == [1, 0]
    pooled = agreement["agree"].sum() / agreement["scored"].sum()
    assert stats.binom.cdf(0, 1, pooled) <= correlated.SEED_LEVEL
    assert shared_links(data, {("h1", "h2"): (100, 10), ("w", "x"): (10, 6)}) == {("w", "x")}


def test_the_others_rate_is_floored_above_zero_and_read_from_a_single_event():
    # Outside the seeds one error event, not shared: q0 is 1e-6, and three shared errors link.
    data = labels_with_seeds(["s1", "s2"], rounds=4)
    assert shared_links(data, {("h1", "h2"): (1, 0), ("s1", "s2"): (3, 3)}) == {("s1", "s2")}
    # No error event outside the seeds at all: no rate to compare with, nothing linked.
    assert shared_links(data, {("h1", "s1"): (5, 1), ("s1", "s2"): (3, 3)}) == set()


def test_the_seeds_must_share_errors_at_least_a_quarter_more_often_than_the_others():
    data = labels_with_seeds(["s1", "s2"], rounds=4)
    # q0 = 1/4: 1000 of 3200 is exactly 1.25 * q0 and passes; 999 would not.
    assert 1.25 * 0.25 * 3200 == 1000
    assert shared_links(data, {("h1", "h2"): (4, 1), ("s1", "s2"): (3200, 1000)}) == {("s1", "s2")}
    assert shared_links(data, {("h1", "h2"): (4, 1), ("s1", "s2"): (3200, 999)}) == set()
    # 248 of 2000 at q0 = 0.1 is significant (p < 0.001) but under the ratio (250): not linked.
    assert stats.binom.sf(247, 2000, 0.1) < 0.001
    assert shared_links(data, {("h1", "h2"): (100, 10), ("s1", "s2"): (2000, 248)}) == set()
    # No error events among the seeds: nothing to test.
    assert shared_links(data, {("h1", "h2"): (100, 10), ("s1", "s2"): (0, 0)}) == set()


def test_the_seeds_shared_errors_are_tested_at_alpha_inclusive():
    data = labels_with_seeds(["s1", "s2"], rounds=4)
    counts = {("h1", "h2"): (100, 10), ("s1", "s2"): (30, 9)}
    at_least_nine = float(stats.binom.sf(8, 30, 0.1))
    assert shared_links(data, counts, alpha=at_least_nine) == {("s1", "s2")}
    assert shared_links(data, counts, alpha=float(stats.binom.sf(9, 30, 0.1))) == set()


# --- gold at risk --------------------------------------------------------------------------------------


def task(name: str, **labels: str) -> Rows:
    return [(name, worker, label) for worker, label in labels.items()]


GROUPS = CorrelatedCheck(
    groups=(
        CorrelatedGroup(1, ("g1", "g2", "g3"), ()),
        CorrelatedGroup(2, ("k1", "k2"), ()),
        CorrelatedGroup(3, ("m1", "m2"), ()),
    ),
    tested_pairs=3,
    calibration=1.0,
    alpha=0.01,
)


def at_risk_rows() -> Rows:
    rows = task("t1", g1=N, g2=N, g3=N, h1=E, h2=E)  # gold N only with the group's three votes
    rows += task("t2", g1=C, g2=C, h1=C, h2=C, h3=E, h4=E)  # the others tied C and E
    rows += task("t3", g1=E, g2=E, g3=E, h1=N, h2=N, h3=N, h4=E, h5=E)  # the others put N first
    rows += task("t4", g1=E, h1=E, h2=E, h3=E)  # the others agree: not at risk
    rows += task("t5", g1=N, k1=N, k2=N, h1=E, h2=E)  # group 2 has the most votes
    rows += task("t6", g1=C, k1=C, h1=C, h2=E, h3=E)  # one vote each: the lower number
    rows += task("t7", g1=N, g2=N, h1=E, h2=E, h3=C)  # no gold: nothing rests on a group
    rows += task("t8", h1=E, h2=E, h3=E)  # no group votes
    # h6, h7 and h8 say E whenever the others say N, so Dawid–Skene reads their E as N ...
    for number in range(6):
        rows += task(f"n{number}", h1=N, h2=N, h3=N, h4=N, h6=E, h7=E, h8=E)
    # ... and on t9 turns their gold E (the others put E first, the group's N is one vote) to N.
    rows += task("t9", g1=N, h6=E, h7=E, h8=E, h1=N)
    # Three groups, each tied, and nobody else: gold E (three of six), no vote left for Dawid–Skene.
    rows += task("t10", g1=N, g2=E, k1=N, k2=E, m1=N, m2=E)
    return rows


COLUMNS = ["task", "gold", "group", "others", "as_one_vote", "dawid_skene", "reason"]


def test_gold_that_rests_on_a_group_is_sent_with_the_reason_and_the_group():
    found = correlated.gold_at_risk(table(at_risk_rows()), GROUPS, use_dawid_skene=False)
    assert list(found.columns) == COLUMNS
    assert found.index.tolist() == list(range(len(found)))
    assert found.to_dict("records") == [
        {
            "task": "t1",
            "gold": N,
            "group": 1,
            "others": E,
            "as_one_vote": NO_GOLD,
            "dawid_skene": "",
            "reason": "gold neutral rests on group 1: as one vote it is -",
        },
        {
            "task": "t2",
            "gold": C,
            "group": 1,
            "others": NO_GOLD,
            "as_one_vote": C,
            "dawid_skene": "",
            "reason": "gold contradiction rests on group 1: the other labels are tied",
        },
        {
            "task": "t3",
            "gold": E,
            "group": 1,
            "others": N,
            "as_one_vote": E,
            "dawid_skene": "",
            "reason": "gold entailment rests on group 1: the other labels put neutral first",
        },
        {
            "task": "t5",
            "gold": N,
            "group": 2,
            "others": E,
            "as_one_vote": NO_GOLD,
            "dawid_skene": "",
            "reason": "gold neutral rests on group 2: as one vote it is -",
        },
        {
            "task": "t6",
            "gold": C,
            "group": 1,
            "others": E,
            "as_one_vote": C,
            "dawid_skene": "",
            "reason": "gold contradiction rests on group 1: the other labels put entailment first",
        },
        {
            "task": "t10",
            "gold": E,
            "group": 1,
            "others": NO_GOLD,
            "as_one_vote": NO_GOLD,
            "dawid_skene": "",
            "reason": "gold entailment rests on group 1: as one vote it is -",
        },
    ]


def test_dawid_skene_with_each_group_as_one_worker_can_overrule_the_gold_by_default():
    data = table(at_risk_rows())
    fitted = dawid_skene(correlated.groups_as_one_worker(data, GROUPS)).labels
    assert (fitted["t9"], fitted["t1"], fitted["t3"], fitted["t7"], fitted["t4"]) == (N, E, N, E, E)
    found = correlated.gold_at_risk(data, GROUPS).set_index("task")
    assert found.index.tolist() == ["t1", "t2", "t3", "t5", "t6", "t9", "t10"]
    # t10 has no vote left once each group is one: Dawid–Skene gives it no label ('').
    assert "t10" not in fitted
    assert found["dawid_skene"].to_dict() == {task: fitted.get(task, "") for task in found.index}
    assert found.loc["t9"].tolist() == [
        E,
        1,
        E,
        E,
        N,
        "Dawid–Skene with group 1 as one worker says neutral, gold entailment",
    ]
    # Where Dawid–Skene also disagrees, the group's own reason is the one given.
    assert found.loc["t1", "reason"] == "gold neutral rests on group 1: as one vote it is -"
    assert found.loc["t3", "reason"] == "gold entailment rests on group 1: the other labels put neutral first"


def test_without_a_group_nothing_is_at_risk():
    alone = CorrelatedCheck(groups=(), tested_pairs=3, calibration=1.0, alpha=0.01)
    found = correlated.gold_at_risk(table(at_risk_rows()), alone)
    assert list(found.columns) == COLUMNS and found.empty


def test_labels_are_coded_in_order_of_first_sight_and_votes_counted_per_task():
    data = table([("t2", "w2", N), ("t1", "w1", E), ("t2", "w1", C), ("t1", "w3", N)])
    tasks, workers, labels, task_names, worker_names, label_names = correlated._codes(data)
    assert tasks.tolist() == [0, 1, 0, 1] and task_names.tolist() == ["t2", "t1"]
    assert workers.tolist() == [0, 1, 1, 2] and worker_names.tolist() == ["w2", "w1", "w3"]
    assert labels.tolist() == [2, 1, 0, 2] and label_names.tolist() == [C, E, N]
    assert all(isinstance(index, pd.Index) for index in (task_names, worker_names, label_names))
    votes = correlated._votes(tasks, labels, 3, 3)
    assert votes.dtype == np.int64
    assert votes.tolist() == [[1, 0, 1], [0, 1, 1], [0, 0, 0]]
