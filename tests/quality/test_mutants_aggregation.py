"""What each aggregator hands back, whatever crowd it is given: the result's names, orders and
columns that the stored runs and the calibration read, the arguments it passes to crowd-kit, and
the refusals' words. Each test fits its own small crowd (a module-scoped fit is charged by a
mutation run to the first test that asked for it only).

Plain pytest, no database.
"""

import numpy as np
import pandas as pd
import pytest

from corpus.labels import LABELS, NO_GOLD
from quality.aggregation import (
    AGGREGATORS,
    AggregationResult,
    _expected_accuracy,
    dawid_skene,
    glad,
    mace,
    majority_vote,
    validate_labels,
)

E, N, C = LABELS

SKILL_MEANINGS = {
    "dawid_skene": "P(gives the true label), averaged over the fitted prior of true labels",
    "glad": "GLAD alpha: log-odds scale, 0 = no information, negative = adversarial",
    "mace": "MACE: P(answers competently rather than spamming)",
}


def small_crowd(seed: int = 3, tasks: int = 40, workers: int = 7) -> pd.DataFrame:
    """Each task labelled by 5 of `workers`, most of them right about a seeded truth; rows shuffled
    so that no order of the input lines up with the result's by chance."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, tasks)
    rows = []
    for task, true in enumerate(truth):
        for worker in rng.choice(workers, size=5, replace=False):
            right = rng.random() < (0.9 if worker < workers - 2 else 0.4)
            label = true if right else rng.choice([k for k in range(3) if k != true])
            rows.append((f"t{task:03d}", f"w{worker}", LABELS[label]))
    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    return data.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def fitted(method: str, data: pd.DataFrame) -> AggregationResult:
    # GLAD's default tolerance costs several EM rounds of a second each; these checks need none of them.
    return glad(data, tol=1e-2) if method == "glad" else AGGREGATORS[method](data)


@pytest.mark.parametrize("method", ["dawid_skene", "glad", "mace"])
def test_a_model_names_itself_its_columns_and_what_its_skill_means(method):
    data = small_crowd()
    result = fitted(method, data)
    tasks = sorted(data["task"].unique())
    workers = sorted(data["worker"].unique())
    assert result.method == method
    assert result.skill_meaning == SKILL_MEANINGS[method]
    assert result.labels.name == "label"
    assert list(result.labels.index) == tasks
    assert set(result.labels) <= set(LABELS)
    assert result.posterior is not None and result.posterior.name == "posterior"
    assert list(result.posterior.index) == tasks
    probabilities = result.label_probabilities
    assert probabilities is not None
    assert (probabilities.index.name, probabilities.columns.name) == ("task", "label")
    assert list(probabilities.columns) == sorted(LABELS) and list(probabilities.index) == tasks
    assert np.allclose(probabilities.sum(axis=1), 1.0)
    assert (result.labels == probabilities.idxmax(axis=1)).all()
    assert result.worker_skill is not None and result.worker_skill.name == "skill"
    assert list(result.worker_skill.index) == workers and result.worker_skill.index.name == "worker"
    assert result.worker_skill.notna().all()


def test_only_dawid_skene_gives_a_confusion_table_by_worker_and_given_label():
    data = small_crowd()
    result = dawid_skene(data)
    confusion = result.worker_confusion
    assert confusion is not None
    assert list(confusion.index.names) == ["worker", "given"]
    assert list(confusion.columns) == sorted(LABELS)
    assert list(confusion.index) == sorted(confusion.index)
    # The skill is the confusion's diagonal weighted by the fitted prior of true labels; the most
    # accurate workers (the first five) rank above the two that are right 40% of the time.
    assert result.worker_skill is not None
    assert min(result.worker_skill[f"w{w}"] for w in range(5)) > max(result.worker_skill[["w5", "w6"]])
    assert all(fitted(method, data).worker_confusion is None for method in ("glad", "mace"))


@pytest.mark.parametrize(
    "method, changed",
    [
        ("dawid_skene", {"n_iter": 1}),
        ("dawid_skene", {"tol": 10.0}),
        ("glad", {"n_iter": 1}),
        ("glad", {"tol": 10.0}),
        ("mace", {"n_iter": 1}),
        ("mace", {"random_state": 11}),
    ],
)
def test_a_models_own_settings_reach_crowd_kit(method, changed):
    data = small_crowd(seed=8, workers=6)
    function = AGGREGATORS[method]
    usual = function(data)
    other = function(data, **changed)
    assert usual.label_probabilities is not None and other.label_probabilities is not None
    assert not np.allclose(usual.label_probabilities.to_numpy(), other.label_probabilities.to_numpy())


def test_a_fit_without_settings_is_the_one_its_signature_documents():
    """A stored run (quality.aggregation_runs) fits with the defaults: the same fit as the settings
    the signatures name, so a run is reproducible from them."""
    data = small_crowd(seed=6, tasks=20, workers=6)
    for usual, named in (
        (mace(data), mace(data, n_iter=50, random_state=0)),
        (glad(data), glad(data, n_iter=100, tol=1e-5)),
        (dawid_skene(data), dawid_skene(data, n_iter=100, tol=1e-5)),
    ):
        assert usual.label_probabilities is not None and named.label_probabilities is not None
        assert np.array_equal(usual.label_probabilities.to_numpy(), named.label_probabilities.to_numpy())


def test_a_workers_expected_accuracy_weights_each_true_label_by_its_prior():
    """sum over k of prior(k) * P(gives k | true k); a label the worker never gave counts 0, and a
    true label without a prior weighs nothing."""
    confusion = pd.DataFrame(
        [[0.8, 0.1, 0.3], [0.2, 0.6, 0.1], [0.5, 0.2, 0.1], [0.1, 0.1, 0.7]],
        index=pd.MultiIndex.from_tuples([("w1", E), ("w1", N), ("w2", E), ("w2", C)], names=["worker", "given"]),
        columns=[E, N, C],
    )
    priors = pd.Series({E: 0.5, N: 0.3})
    skill = _expected_accuracy(confusion, priors)
    assert skill.name == "skill" and list(skill.index) == ["w1", "w2"]
    assert skill["w1"] == pytest.approx(0.5 * 0.8 + 0.3 * 0.6)
    assert skill["w2"] == pytest.approx(0.5 * 0.5)


def test_glad_fits_without_a_progress_bar(capfd):
    glad(small_crowd(tasks=10), tol=1e-2)
    captured = capfd.readouterr()
    assert (captured.out, captured.err) == ("", "")


def test_mace_fits_the_same_crowd_the_same_way_each_time():
    data = small_crowd(seed=4)
    first, again = mace(data), mace(data)
    assert first.label_probabilities is not None and again.label_probabilities is not None
    assert np.array_equal(first.label_probabilities.to_numpy(), again.label_probabilities.to_numpy())


def test_majority_vote_names_itself_sorts_its_tasks_and_takes_its_threshold():
    data = pd.DataFrame(
        [("b", "w1", E), ("b", "w2", E), ("b", "w3", N), ("a", "w1", C), ("a", "w2", C), ("a", "w3", C)],
        columns=["task", "worker", "label"],
    )
    result = majority_vote(data)
    assert (result.method, result.labels.name) == ("majority_vote", "label")
    assert result.labels.to_dict() == {"a": C, "b": NO_GOLD}
    assert list(result.labels.index) == ["a", "b"]
    assert majority_vote(data, min_votes=2).labels.to_dict() == {"a": C, "b": E}
    assert result.posterior is None and result.worker_skill is None


def test_checked_labels_keep_only_the_three_columns_numbered_afresh():
    data = pd.DataFrame(
        {"label": [E, N, C], "extra": [1, 2, 3], "worker": ["w1", "w2", "w3"], "task": ["t", "t", "t"]},
        index=[10, 20, 30],
    )
    checked = validate_labels(data)
    assert list(checked.columns) == ["task", "worker", "label"]
    assert list(checked.index) == [0, 1, 2]


def test_refusals_name_what_is_wrong():
    with pytest.raises(ValueError) as missing:
        validate_labels(pd.DataFrame({"task": ["t"], "label": [E]}))
    assert str(missing.value) == "labels need the columns ('task', 'worker', 'label'); missing ['worker']"
    with pytest.raises(ValueError) as empty:
        validate_labels(pd.DataFrame({"task": ["t"], "worker": [None], "label": [E]}))
    assert str(empty.value) == "labels must not be empty (task, worker and label are all required)"
    with pytest.raises(ValueError) as no_gold:
        validate_labels(pd.DataFrame({"task": ["t"], "worker": ["w1"], "label": [NO_GOLD]}))
    assert str(no_gold.value) == "'-' is the no-gold outcome, not a label a worker can give"
    with pytest.raises(ValueError) as twice:
        validate_labels(pd.DataFrame({"task": ["t1", "t1"], "worker": ["w9", "w9"], "label": [E, N]}))
    assert str(twice.value) == "worker 'w9' labelled task 't1' more than once"
