"""The correlated-error statistics to the figure (docs/checks.md, "library mutants"): the pair
statistics against a plain loop over the pairs of workers, the majorities and pluralities row by
row, the overlap's minimum, groups numbered and as one vote, and the evidence a group is stored
and shown with."""

import random
from collections import Counter
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from corpus.labels import NO_GOLD
from quality import correlated
from quality.aggregation import validate_labels
from quality.correlated import CorrelatedCheck, CorrelatedGroup, PairEvidence

E, N, C = "entailment", "neutral", "contradiction"
# A pair of workers' figures, in `pair_statistics`' column order after the two workers.
FIGURES = ("shared", "disagreements", "expected_disagreements", "co_errors", "expected_co_errors", "error_events")


def strict_majority(votes: Counter) -> str | None:
    total = sum(votes.values())
    if total < 2:
        return None
    label, top = max(sorted(votes.items()), key=lambda item: item[1])
    return label if 2 * top > total else None


def loop_statistics(rows: list[tuple[str, str, str]]) -> dict[tuple[str, str], dict[str, float]]:
    """`pair_statistics` written as a plain loop: each pair of workers' scored tasks one by one."""
    labels = sorted({label for _, _, label in rows})
    order = list(dict.fromkeys(worker for _, worker, _ in rows))
    votes: dict[str, Counter] = {}
    for task, _, label in rows:
        votes.setdefault(task, Counter())[label] += 1
    counts = {worker: {r: dict.fromkeys(labels, 1.0) for r in labels} for worker in order}
    for task, worker, label in rows:
        reference = strict_majority(votes[task] - Counter([label]))
        if reference is not None:
            counts[worker][reference][label] += 1
    pi = {
        worker: {r: {k: n / sum(row.values()) for k, n in row.items()} for r, row in table.items()}
        for worker, table in counts.items()
    }
    by_task: dict[str, list[tuple[str, str]]] = {}
    for task, worker, label in rows:
        by_task.setdefault(task, []).append((worker, label))
    figures: dict[tuple[str, str], dict[str, float]] = {}
    for task, labelled in by_task.items():
        for (a, label_a), (b, label_b) in combinations(sorted(labelled, key=lambda row: order.index(row[0])), 2):
            reference = strict_majority(votes[task] - Counter([label_a, label_b]))
            if reference is None:
                continue
            pair = figures.setdefault((a, b), dict.fromkeys(FIGURES, 0.0))
            both = {k: pi[a][reference][k] * pi[b][reference][k] for k in labels}
            pair["shared"] += 1
            pair["disagreements"] += label_a != label_b
            pair["expected_disagreements"] += 1 - sum(both.values())
            pair["co_errors"] += label_a == label_b and label_a != reference
            pair["expected_co_errors"] += sum(value for k, value in both.items() if k != reference)
            pair["error_events"] += label_a != reference or label_b != reference
    return figures


def crowd(seed: int = 5, tasks: int = 40) -> list[tuple[str, str, str]]:
    """Tasks labelled by four or five of seven workers; two of them copy each other's wrong labels."""
    rng = random.Random(seed)
    rows = []
    for number in range(tasks):
        truth = rng.choice([E, N, C])
        wrong = rng.choice([label for label in (E, N, C) if label != truth])
        for worker in rng.sample([f"w{index}" for index in range(7)], rng.choice([4, 5])):
            careless = worker in ("w0", "w1") and rng.random() < 0.5
            label = wrong if careless else truth if rng.random() < 0.8 else rng.choice([E, N, C])
            rows.append((f"t{number}", worker, label))
    return rows


def test_the_pair_statistics_are_a_loop_over_each_pair_of_workers_scored_tasks():
    rows = crowd()
    frame = correlated.pair_statistics(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    expected = loop_statistics(rows)
    assert list(frame.columns) == ["worker_a", "worker_b", *FIGURES]
    assert set(zip(frame["worker_a"], frame["worker_b"], strict=True)) == set(expected)
    for row in frame.itertuples(index=False):
        figures = expected[(row.worker_a, row.worker_b)]
        for column, value in figures.items():
            assert getattr(row, column) == pytest.approx(value), (row.worker_a, row.worker_b, column)


def test_a_strict_majority_needs_two_labels_and_more_than_half():
    votes = np.array([[2, 1, 0], [1, 1, 0], [1, 0, 0], [0, 3, 1], [2, 2, 1], [0, 0, 2]])
    assert correlated._strict_majority(votes).tolist() == [0, -1, -1, 1, -1, 2]


def test_a_strict_plurality_is_a_label_ahead_of_every_other():
    names = pd.Index([C, E, N])
    votes = np.array([[2, 1, 0], [1, 1, 0], [0, 0, 0], [0, 1, 3]])
    assert correlated._strict_plurality(votes, names).tolist() == [C, NO_GOLD, NO_GOLD, N]
    assert correlated._strict_plurality(np.array([[1], [0]]), pd.Index([E])).tolist() == [E, NO_GOLD]
    assert correlated._strict_plurality(np.array([[1, 1], [2, 1]]), pd.Index([E, N])).tolist() == [NO_GOLD, E]


def test_the_gold_is_three_of_five():
    names = pd.Index([C, E, N])
    votes = np.array([[3, 2, 0], [2, 2, 1], [0, 0, 5]])
    assert correlated._gold(votes, names).tolist() == [C, NO_GOLD, N]


def test_each_worker_is_scored_against_the_others_majority():
    rows = [("t1", "a", E), ("t1", "b", E), ("t1", "c", N), ("t2", "a", N), ("t2", "b", E), ("t2", "c", E)]
    rows += [("t3", "a", C), ("t3", "c", C)]
    agreement = correlated.worker_agreement(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    # a on t2 and c on t1 have a majority of the others (E, E), both against it; b has none (E
    # and N both times), and t3 has one other label.
    assert agreement.loc["a"].tolist() == [1, 0]
    assert agreement.loc["b"].tolist() == [0, 0]
    assert agreement.loc["c"].tolist() == [1, 0]
    rows += [("t1", "d", E), ("t2", "d", E)]
    agreement = correlated.worker_agreement(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    # t1's others for a: E, N, E (E); for c: E, E, E (E). t2's for a: E, E, E (E); for b: N, E, E (E).
    assert agreement.loc["a"].tolist() == [2, 1]
    assert agreement.loc["b"].tolist() == [2, 2]
    assert agreement.loc["c"].tolist() == [2, 1]
    assert agreement.loc["d"].tolist() == [2, 2]


def test_the_pair_tests_minimum_follows_the_overlap_between_its_floor_and_ceiling():
    # 40 tasks of three labels over four workers, thirty labels each: two workers would share
    # 30 * 30 * 2 / (3 * 40) = 15 tasks at random, and half of it is asked.
    rows = [(f"t{task}", f"w{(task + offset) % 4}", E) for task in range(40) for offset in range(3)]
    assert correlated.scaled_min_shared(pd.DataFrame(rows, columns=["task", "worker", "label"])) == 8
    few = [(f"t{task}", f"w{(task + offset) % 40}", E) for task in range(40) for offset in range(2)]
    assert correlated.scaled_min_shared(pd.DataFrame(few, columns=["task", "worker", "label"])) == (
        correlated.MIN_SHARED_FLOOR
    )
    many = [(f"t{task}", f"w{offset}", E) for task in range(40) for offset in range(5)]
    assert correlated.scaled_min_shared(pd.DataFrame(many, columns=["task", "worker", "label"])) == (
        correlated.MIN_SHARED
    )
    assert correlated.scaled_min_shared(pd.DataFrame(columns=["task", "worker", "label"])) == correlated.MIN_SHARED


def edge(a: str, b: str, shared: int = 10, co_errors: int = 4) -> PairEvidence:
    return PairEvidence(a, b, shared, 1, 2.5, co_errors, 0.001)


def test_groups_are_the_linked_components_largest_first_and_each_keeps_its_own_edges():
    # The larger group's names sort after the smaller one's: it is still group 1.
    edges = [edge("a", "b"), edge("q", "r", shared=12), edge("p", "q", shared=11), edge("p", "r")]
    groups = correlated._components(edges)
    assert [(group.number, group.members) for group in groups] == [(1, ("p", "q", "r")), (2, ("a", "b"))]
    assert groups[0].edges == (edges[1], edges[2], edges[3]) and groups[1].edges == (edges[0],)
    assert (groups[0].shared, groups[0].disagreements, groups[0].co_errors) == (33, 3, 12)
    assert groups[0].expected_disagreements == pytest.approx(7.5)
    assert correlated._components([]) == ()
    check = CorrelatedCheck(groups=groups, tested_pairs=7, calibration=0.123456, alpha=0.01, flagged_pairs=tuple(edges))
    assert check.group_of() == {"p": 1, "q": 1, "r": 1, "a": 2, "b": 2}
    assert check.figures() == {
        "groups": 2,
        "workers_in_groups": 5,
        "tested_pairs": 7,
        "flagged_pairs": 4,
        "calibration": 0.123,
        "alpha": 0.01,
    }


def test_a_links_evidence_is_stored_and_shown_rounded_under_its_names():
    evidence = PairEvidence("a", "b", 12, 1, 3.14159, 4, 0.000123456, correlated.CLIQUE_TEST)
    assert evidence.as_dict() == {
        "worker_a": "a",
        "worker_b": "b",
        "shared": 12,
        "disagreements": 1,
        "expected_disagreements": 3.14,
        "co_errors": 4,
        "p_value": 0.000123,
        "linked_by": correlated.CLIQUE_TEST,
    }


def maximal_cliques_by_every_subset(neighbours: dict[str, set[str]]) -> list[list[str]]:
    nodes = sorted(neighbours)
    cliques = [
        set(subset)
        for size in range(1, len(nodes) + 1)
        for subset in combinations(nodes, size)
        if all(b in neighbours[a] for a, b in combinations(subset, 2))
    ]
    return sorted(sorted(clique) for clique in cliques if not any(clique < other for other in cliques))


def test_the_maximal_cliques_are_those_of_every_subset_on_small_graphs():
    rng = random.Random(11)
    for _ in range(40):
        nodes = [chr(ord("a") + index) for index in range(rng.randint(3, 7))]
        neighbours: dict[str, set[str]] = {}
        for a, b in combinations(nodes, 2):
            if rng.random() < 0.55:
                neighbours.setdefault(a, set()).add(b)
                neighbours.setdefault(b, set()).add(a)
        assert sorted(correlated._maximal_cliques(neighbours)) == maximal_cliques_by_every_subset(neighbours)


def test_a_group_votes_once_its_plurality_and_not_at_all_when_tied():
    rows = [("t1", "a", E), ("t1", "b", E), ("t1", "c", N), ("t1", "h", C)]
    rows += [("t2", "a", E), ("t2", "b", N), ("t2", "h", N)]
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    group = CorrelatedGroup(number=1, members=("a", "b", "c"), edges=())
    check = CorrelatedCheck(groups=(group,), tested_pairs=3, calibration=1.0, alpha=0.01)
    merged = correlated.groups_as_one_worker(data, check)
    assert sorted(map(tuple, merged[["task", "worker", "label"]].to_numpy().tolist())) == [
        ("t1", "group-1", E),
        ("t1", "h", C),
        ("t2", "h", N),
    ]
    # A label table of its own: one row a label, numbered from 0 (no index label twice).
    assert merged.index.tolist() == list(range(3))
    alone = CorrelatedCheck(groups=(), tested_pairs=3, calibration=1.0, alpha=0.01)
    assert correlated.groups_as_one_worker(data, alone).equals(validate_labels(data))
