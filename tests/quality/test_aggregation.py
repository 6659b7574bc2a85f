"""Aggregation of crowd labels: the papers' majority vote by hand, and crowd-kit's models on seeded crowds.

Plain pytest, no database.
"""

import numpy as np
import pandas as pd
import pytest

from corpus.gold import gold_label
from corpus.labels import LABELS, NO_GOLD
from quality.aggregation import (
    AggregationResult,
    dawid_skene,
    glad,
    mace,
    majority_vote,
    validate_labels,
)

E, N, C = LABELS


def frame(labels_by_task: dict[str, list[str]]) -> pd.DataFrame:
    """crowd-kit's layout from {task: [label of worker 0, label of worker 1, ...]}."""
    rows = [
        (task, f"w{position}", label)
        for task, labels in labels_by_task.items()
        for position, label in enumerate(labels)
    ]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def simulated_crowd(
    seed: int, n_tasks: int, honest: int, adversarial: int = 0, random: int = 0, accuracy: float = 0.75
):
    """Each task labelled by 5 of the workers; returns (labels frame, true label per task, kind per worker).

    Honest workers are right with `accuracy`, else uniform over the wrong labels. Adversarial
    workers answer a fixed permutation of the truth (entailment -> contradiction -> neutral ->
    entailment) 90% of the time: wrong, but systematically so. Random workers answer uniformly.
    """
    rng = np.random.default_rng(seed)
    kinds = ["honest"] * honest + ["adversarial"] * adversarial + ["random"] * random
    permutation = {0: 2, 2: 1, 1: 0}
    truth = rng.integers(0, 3, n_tasks)
    rows = []
    for task, true in enumerate(truth):
        for worker in rng.choice(len(kinds), size=5, replace=False):
            kind = kinds[worker]
            if kind == "honest":
                label = true if rng.random() < accuracy else rng.choice([k for k in range(3) if k != true])
            elif kind == "adversarial":
                label = permutation[true] if rng.random() < 0.9 else rng.integers(0, 3)
            else:
                label = rng.integers(0, 3)
            rows.append((f"t{task:04d}", f"w{worker:02d}", LABELS[label]))
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    true_labels = pd.Series([LABELS[k] for k in truth], index=[f"t{task:04d}" for task in range(n_tasks)])
    return data, true_labels, dict(zip([f"w{w:02d}" for w in range(len(kinds))], kinds, strict=False))


def accuracy(result: AggregationResult, truth: pd.Series) -> float:
    """Share of tasks given their true label; NO_GOLD counts as wrong."""
    return float((result.labels.reindex(truth.index) == truth).mean())


def test_majority_vote_follows_the_three_of_five_rule_on_hand_worked_pairs():
    data = frame(
        {
            "unanimous": [C, C, C, C, C],
            "three_of_five": [E, E, E, N, C],
            "three_two": [N, N, E, N, E],
            "two_two_one": [E, E, N, N, C],
            "author_outvoted": [C, E, E, E, N],
        }
    )
    result = majority_vote(data)
    assert result.labels.to_dict() == {
        "unanimous": C,
        "three_of_five": E,
        "three_two": N,
        "two_two_one": NO_GOLD,
        "author_outvoted": E,
    }
    assert result.posterior is None, "a vote count is not a posterior"


def test_gold_label_refuses_a_threshold_that_two_labels_could_both_reach():
    assert gold_label([E, E, N, N, C], min_votes=3) == NO_GOLD
    with pytest.raises(ValueError):
        gold_label([E, E, N, N, C, C], min_votes=3)


# Fitting the models is the slow part (GLAD above all), so each crowd is fitted once per module.
@pytest.fixture(scope="module")
def adversarial_crowd():
    """12 honest workers and a block of 8 adversarial ones, 400 pairs."""
    data, truth, kinds = simulated_crowd(seed=7, n_tasks=400, honest=12, adversarial=8)
    return data, truth, kinds, dawid_skene(data)


@pytest.fixture(scope="module")
def random_crowd():
    """8 honest workers (85% right) and 4 random ones, 150 pairs, fitted by every model."""
    data, truth, kinds = simulated_crowd(seed=5, n_tasks=150, honest=8, random=4, accuracy=0.85)
    results = {method.__name__: method(data) for method in (majority_vote, dawid_skene, mace)}
    # GLAD's default tolerance costs some 7 EM rounds of seconds each here; 3 rounds decide these labels.
    results["glad"] = glad(data, tol=1e-3)
    return data, truth, kinds, results


def test_dawid_skene_beats_majority_vote_when_a_block_of_workers_is_adversarial(adversarial_crowd):
    data, truth, _, ds_result = adversarial_crowd
    majority_accuracy = accuracy(majority_vote(data), truth)
    ds_accuracy = accuracy(ds_result, truth)
    assert ds_accuracy >= 0.9
    assert ds_accuracy >= majority_accuracy + 0.15, (majority_accuracy, ds_accuracy)


def test_dawid_skene_confusion_reads_given_label_by_true_label(adversarial_crowd):
    _, _, kinds, result = adversarial_crowd
    confusion = result.worker_confusion
    # For each worker and true label, the probabilities of the labels they give sum to 1.
    column_sums = confusion.groupby(level="worker").sum()
    assert np.allclose(column_sums.to_numpy(), 1.0)
    adversary = next(worker for worker, kind in kinds.items() if kind == "adversarial")
    honest = next(worker for worker, kind in kinds.items() if kind == "honest")
    # The adversary says contradiction when the pair is an entailment.
    assert confusion.loc[(adversary, C), E] > 0.7
    assert confusion.loc[(honest, E), E] > 0.6
    assert result.worker_skill[honest] > 0.6
    assert result.worker_skill[adversary] < 0.2


@pytest.mark.parametrize("method", ["dawid_skene", "glad", "mace"])
def test_posterior_is_a_probability_of_the_chosen_label(random_crowd, method):
    data, _, _, results = random_crowd
    result = results[method]
    probabilities = result.label_probabilities
    assert list(probabilities.columns) == sorted(LABELS)
    assert np.allclose(probabilities.sum(axis=1), 1.0)
    assert ((probabilities >= 0) & (probabilities <= 1)).all().all()
    assert ((result.posterior > 1 / 3 - 1e-9) & (result.posterior <= 1)).all()
    assert (result.posterior == probabilities.max(axis=1)).all()
    assert (result.labels == probabilities.idxmax(axis=1)).all()
    assert set(result.labels.index) == set(data["task"])


@pytest.mark.parametrize("method", ["dawid_skene", "glad", "mace"])
def test_models_rate_random_workers_below_honest_ones(random_crowd, method):
    _, truth, kinds, results = random_crowd
    result = results[method]
    skill = result.worker_skill
    honest = [skill[worker] for worker, kind in kinds.items() if kind == "honest"]
    random = [skill[worker] for worker, kind in kinds.items() if kind == "random"]
    assert max(random) < min(honest), result.skill_meaning
    assert accuracy(result, truth) >= accuracy(results["majority_vote"], truth)


@pytest.mark.parametrize(
    "rows, problem",
    [
        ([("t", "w1", E), ("t", "w1", N)], "more than once"),
        ([("t", "w1", NO_GOLD)], "no-gold"),
        ([("t", None, E)], "empty"),
    ],
)
def test_labels_that_would_mislead_a_model_are_refused(rows, problem):
    with pytest.raises(ValueError, match=problem):
        validate_labels(pd.DataFrame(rows, columns=["task", "worker", "label"]))
