"""Aggregating crowd labels into one label per pair: the papers' majority vote and models of workers.

Input is crowd-kit's layout: one row per label, the columns `task` (the pair), `worker` and
`label`; the author's label counts as one worker's like the four validators'. The models
(Dawid & Skene 1979, GLAD: Whitehill et al. 2009, MACE: Hovy et al. 2013) are crowd-kit's; this
module feeds them and reads their fitted attributes back into one shape (`AggregationResult`).
"""

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pandas as pd
from crowdkit.aggregation import GLAD, MACE, DawidSkene
from pandas.errors import Pandas4Warning

from corpus.gold import gold_label
from corpus.labels import GOLD_MAJORITY, NO_GOLD

COLUMNS = ("task", "worker", "label")


@dataclass(frozen=True)
class AggregationResult:
    """What one aggregator says about the tasks and the workers.

    labels: task -> aggregated label (NO_GOLD where the method declines, as majority vote does).
    posterior: task -> the model's probability of that label; None for majority vote, which is
        a count rule, not a model.
    label_probabilities: task x label, each row summing to 1; None for majority vote.
    worker_confusion: Dawid–Skene only. Indexed by (worker, given label), one column per true
        label: worker_confusion.loc[(w, given), true] = P(w gives `given` | the pair is `true`).
    worker_skill: worker -> one number, higher is better; what it means depends on the method
        (see `skill_meaning`).
    """

    method: str
    labels: pd.Series
    posterior: pd.Series | None = None
    label_probabilities: pd.DataFrame | None = None
    worker_confusion: pd.DataFrame | None = None
    worker_skill: pd.Series | None = None
    skill_meaning: str = ""


def validate_labels(data: pd.DataFrame) -> pd.DataFrame:
    """The three columns of crowd-kit's layout, checked; raises ValueError on what would mislead a model.

    A worker labelling the same task twice would be counted as two independent votes, and NO_GOLD
    is an outcome, never an input label.
    """
    missing = [column for column in COLUMNS if column not in data.columns]
    if missing:
        raise ValueError(f"labels need the columns {COLUMNS}; missing {missing}")
    data = data.loc[:, list(COLUMNS)]
    if data.isna().any().any():
        raise ValueError("labels must not be empty (task, worker and label are all required)")
    if (data["label"] == NO_GOLD).any():
        raise ValueError(f"{NO_GOLD!r} is the no-gold outcome, not a label a worker can give")
    repeated = data.duplicated(subset=["task", "worker"])
    if repeated.any():
        example = data.loc[repeated].iloc[0]
        raise ValueError(f"worker {example['worker']!r} labelled task {example['task']!r} more than once")
    return data.reset_index(drop=True)


def majority_vote(data: pd.DataFrame, min_votes: int = GOLD_MAJORITY) -> AggregationResult:
    """The papers' gold label per task: the label with at least `min_votes` votes, else NO_GOLD."""
    data = validate_labels(data)
    labels = data.groupby("task", sort=True)["label"].agg(lambda votes: gold_label(list(votes), min_votes))
    return AggregationResult(method="majority_vote", labels=labels.astype(str).rename("label"))


def dawid_skene(data: pd.DataFrame, n_iter: int = 100, tol: float = 1e-5) -> AggregationResult:
    """Dawid–Skene: a full confusion matrix per worker and a prior over true labels, fitted by EM.

    The worker skill reported is the probability that the worker gives the true label, averaged
    over the fitted prior of true labels: sum over k of prior(k) * P(gives k | true k).
    """
    data = validate_labels(data)
    with _quiet_crowd_kit():
        model = DawidSkene(n_iter=n_iter, tol=tol).fit(data)
    probabilities = _ordered_probabilities(model.probas_, data)
    assert model.errors_ is not None  # set by fit()
    confusion = model.errors_.loc[:, probabilities.columns].sort_index()
    confusion.index = confusion.index.set_names(["worker", "given"])
    return AggregationResult(
        method="dawid_skene",
        labels=_most_probable(probabilities),
        posterior=probabilities.max(axis=1).rename("posterior"),
        label_probabilities=probabilities,
        worker_confusion=confusion,
        worker_skill=_expected_accuracy(confusion, model.priors_),
        skill_meaning="P(gives the true label), averaged over the fitted prior of true labels",
    )


def glad(data: pd.DataFrame, n_iter: int = 100, tol: float = 1e-5) -> AggregationResult:
    """GLAD: a skill per worker (alpha) and an easiness per task (beta); P(correct) = sigmoid(alpha * beta).

    Alpha is unbounded: negative for a worker who tends to give wrong labels, near 0 for a
    guesser. GLAD is by far the slowest of the three models here (minutes at 40,000 pairs).
    """
    data = validate_labels(data)
    with _quiet_crowd_kit():
        model = GLAD(n_iter=n_iter, tol=tol, silent=True).fit(data)
    probabilities = _ordered_probabilities(model.probas_, data)
    return AggregationResult(
        method="glad",
        labels=_most_probable(probabilities),
        posterior=probabilities.max(axis=1).rename("posterior"),
        label_probabilities=probabilities,
        worker_skill=model.alphas_.rename("skill").sort_index(),
        skill_meaning="GLAD alpha: log-odds scale, 0 = no information, negative = adversarial",
    )


def mace(data: pd.DataFrame, n_iter: int = 50, random_state: int = 0) -> AggregationResult:
    """MACE: each worker answers competently (the true label) or spams (a label from their own habit).

    The skill reported is the fitted probability of answering competently.
    One restart only: crowd-kit 1.4.2 seeds every restart with the same `random_state`, so further
    restarts repeat the first one exactly and only cost time.
    """
    data = validate_labels(data)
    with _quiet_crowd_kit():
        model = MACE(n_restarts=1, n_iter=n_iter, random_state=random_state).fit(data)
    probabilities = _ordered_probabilities(model.probas_, data)
    # MACE keeps its worker parameters as bare arrays in the order pd.factorize meets the workers.
    _, worker_names = pd.factorize(data["worker"])
    competence = pd.Series(model.spamming_[:, 1], index=pd.Index(worker_names, name="worker"), name="skill")
    return AggregationResult(
        method="mace",
        labels=_most_probable(probabilities),
        posterior=probabilities.max(axis=1).rename("posterior"),
        label_probabilities=probabilities,
        worker_skill=competence.sort_index(),
        skill_meaning="MACE: P(answers competently rather than spamming)",
    )


AGGREGATORS: dict[str, Callable[[pd.DataFrame], AggregationResult]] = {
    "majority_vote": majority_vote,
    "dawid_skene": dawid_skene,
    "glad": glad,
    "mace": mace,
}


@contextmanager
def _quiet_crowd_kit() -> Iterator[None]:
    """Silence pandas' notices that crowd-kit 1.4.2 still uses `inplace=` (deprecated in pandas 3.1).

    They come by the thousand from GLAD's inner loop and say nothing about our data; they do
    say crowd-kit will need a release before pandas 4 removes `inplace`.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=Pandas4Warning, module=r"crowdkit\.")
        yield


def _ordered_probabilities(probabilities: pd.DataFrame, data: pd.DataFrame) -> pd.DataFrame:
    """The task x label table sorted by task and by label name, so results line up across methods."""
    labels = sorted(data["label"].unique())
    table = probabilities.reindex(columns=labels).sort_index()
    table.index.name = "task"
    table.columns.name = "label"
    return table.astype(float)


def _most_probable(probabilities: pd.DataFrame) -> pd.Series:
    return probabilities.idxmax(axis=1).astype(str).rename("label")


def _expected_accuracy(confusion: pd.DataFrame, priors: pd.Series) -> pd.Series:
    """sum_k prior(k) * P(gives k | true k), per worker, from a (worker, given) x true confusion table.

    crowd-kit keeps a row only for labels a worker did give; a missing row is a probability of 0.
    """
    given = confusion.index.get_level_values("given").to_numpy()[:, None]
    on_diagonal = given == confusion.columns.to_numpy()[None, :]
    correct_given_true = confusion.where(on_diagonal, 0.0).groupby(level="worker").sum()
    weights = priors.reindex(confusion.columns).fillna(0.0)
    return (correct_given_true * weights).sum(axis=1).rename("skill").sort_index()
