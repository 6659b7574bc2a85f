"""Flags on validators whose labels should not be trusted (SNLI §2.2: "random guessing"), each a
plain `WorkerFlag` with its reason in words and the figures behind it (docs/quality.md, "Worker flags"):
RANDOM_GUESSER (agreement with the leave-one-out gold not significantly above the worker's own
chance level: `random_guesser_flags`), SAME_LABEL and TOO_FAST.

Only validation votes (positions 2-5) are scored by default: the author's label tells how well
they write, not how they validate, and the writing task balances it, which would hide a
same-label habit. It still counts among the other four in a validator's leave-one-out gold.

Everything here is plain Python and dataclasses; no pandas, no Django.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median

from corpus.gold import gold_label
from corpus.labels import AUTHOR_POSITION, GOLD_MAJORITY, NO_GOLD

RANDOM_GUESSER = "random_guesser"
SAME_LABEL = "same_label"
TOO_FAST = "too_fast"
FLAG_KINDS = (RANDOM_GUESSER, SAME_LABEL, TOO_FAST)
# "Too fast": a median time per item below this over at least this many timed items (the workers
# page's flag, and evidence of the quality test: `too_fast_log_ratio`).
TOO_FAST_SECONDS = 4.0
TOO_FAST_MIN_ITEMS = 10

# A worker as the flags name them: a Worker pk from the database (`quality.selectors`), or an
# annotator id string from an imported file (`Vote.worker`).
WorkerId = int | str


@dataclass(frozen=True)
class Vote:
    """One label on one pair. `seconds` is the time spent on the item; None where unknown or not
    a reading time (the author's writing time says nothing about reading speed)."""

    worker: str
    label: str
    seconds: float | None = None


@dataclass(frozen=True)
class PairVotes:
    """A pair's labels in corpus order: the author's first (at AUTHOR_POSITION), then the
    validators' by position; votes[i] is the label at position AUTHOR_POSITION + i."""

    pair_id: str
    votes: tuple[Vote, ...]

    def positioned(self) -> list[tuple[int, Vote]]:
        """(corpus position, vote) of each vote, the author's at AUTHOR_POSITION."""
        return list(enumerate(self.votes, start=AUTHOR_POSITION))


@dataclass(frozen=True)
class WorkerFigures:
    """What one worker did, reduced to the counts the flags need.

    label_counts: every scored label the worker gave, by label.
    loo_items: scored items that have a leave-one-out gold label (gold of the other labels).
    loo_agreements: of those, how many the worker labelled with that gold label.
    loo_own_label_counts / loo_gold_counts: on the same items, the worker's labels and the gold
        labels by label; together they give the chance level of the agreement.
    timed_items / median_seconds: scored items with a time, and their median time per item.
    """

    worker: WorkerId
    label_counts: Mapping[str, int] = field(default_factory=dict)
    loo_items: int = 0
    loo_agreements: int = 0
    loo_own_label_counts: Mapping[str, int] = field(default_factory=dict)
    loo_gold_counts: Mapping[str, int] = field(default_factory=dict)
    timed_items: int = 0
    median_seconds: float | None = None

    @property
    def n_labels(self) -> int:
        return sum(self.label_counts.values())

    @property
    def loo_agreement(self) -> float:
        return self.loo_agreements / self.loo_items if self.loo_items else float("nan")

    @property
    def chance_agreement(self) -> float:
        return chance_agreement(self.loo_own_label_counts, self.loo_gold_counts)


@dataclass(frozen=True)
class WorkerFlag:
    """One reason to distrust one worker: which flag, why in words, and the numbers behind it."""

    worker: WorkerId
    kind: str
    reason: str
    figures: Mapping[str, float]


def leave_one_out_gold(labels: Sequence[str], index: int, min_votes: int = GOLD_MAJORITY) -> str:
    """The gold label of a pair without its label `labels[index]`, else NO_GOLD.

    The papers' rule is an absolute count of votes (3), and we keep the count: with 4 labels left,
    3 of them must agree. A 2-2 or 2-1-1 split of the other four is NO_GOLD, so the worker's item is
    left out of their agreement figures rather than scored against a coin toss.
    """
    if not 0 <= index < len(labels):
        raise IndexError(f"index {index} is not one of the {len(labels)} labels")
    others = [label for other, label in enumerate(labels) if other != index]
    return gold_label(others, min_votes)


def worker_figures(
    pairs: Iterable[PairVotes], min_votes: int = GOLD_MAJORITY, include_author_votes: bool = False
) -> list[WorkerFigures]:
    """Per-worker figures from the labelled pairs, sorted by worker."""
    label_counts: dict[str, Counter[str]] = defaultdict(Counter)
    own_on_loo: dict[str, Counter[str]] = defaultdict(Counter)
    gold_on_loo: dict[str, Counter[str]] = defaultdict(Counter)
    agreements: Counter[str] = Counter()
    seconds: dict[str, list[float]] = defaultdict(list)

    for pair in pairs:
        labels = [vote.label for vote in pair.votes]
        for index, (position, vote) in enumerate(pair.positioned()):
            if position == AUTHOR_POSITION and not include_author_votes:
                continue
            label_counts[vote.worker][vote.label] += 1
            if vote.seconds is not None:
                seconds[vote.worker].append(vote.seconds)
            loo_gold = leave_one_out_gold(labels, index, min_votes)
            if loo_gold == NO_GOLD:
                continue
            own_on_loo[vote.worker][vote.label] += 1
            gold_on_loo[vote.worker][loo_gold] += 1
            agreements[vote.worker] += vote.label == loo_gold

    return [
        WorkerFigures(
            worker=worker,
            label_counts=dict(label_counts[worker]),
            loo_items=sum(own_on_loo[worker].values()),
            loo_agreements=agreements[worker],
            loo_own_label_counts=dict(own_on_loo[worker]),
            loo_gold_counts=dict(gold_on_loo[worker]),
            timed_items=len(seconds[worker]),
            median_seconds=median(seconds[worker]) if seconds[worker] else None,
        )
        for worker in sorted(label_counts)
    ]


def chance_agreement(own_label_counts: Mapping[str, int], gold_label_counts: Mapping[str, int]) -> float:
    """Agreement expected if the worker's labels were unrelated to the pairs: sum_k q(k) * g(k).

    q is the worker's own label distribution and g the gold distribution on the same items (the
    "expected agreement" of Cohen's kappa). A uniform guesser gets 1/3 whatever g is; a worker who
    always says "entailment" gets g(entailment), which is more than 1/3 when gold is unbalanced
    towards entailment: that much agreement is habit, not skill.
    """
    own_total = sum(own_label_counts.values())
    gold_total = sum(gold_label_counts.values())
    if not own_total or not gold_total:
        return float("nan")
    return sum(
        count / own_total * gold_label_counts.get(label, 0) / gold_total for label, count in own_label_counts.items()
    )


def better_than_chance_p_value(agreements: int, items: int, chance: float) -> float:
    """One-sided exact binomial p-value of `agreements` of `items` under H0: P(agree) = chance."""
    # Imported here: scipy.stats is slow to import, and every process imports this module.
    from scipy.stats import binomtest

    p_value: float = binomtest(agreements, items, chance, alternative="greater").pvalue
    return p_value


def better_than_chance_p_values(tested: Sequence[tuple[int, int, float]]) -> list[float]:
    """`better_than_chance_p_value` of each (agreements, items, chance), in one vectorised call:
    binomtest's "greater" p-value is min(1, P(X >= agreements)), the binomial survival function at
    agreements - 1, which scipy computes element by element the same way for an array. One call
    per worker would be a noticeable share of the workers page for a large crowd."""
    if not tested:
        return []
    import numpy as np
    from scipy.stats import binom

    agreements, items, chance = (np.asarray(column) for column in zip(*tested, strict=True))
    return [min(1.0, float(value)) for value in np.atleast_1d(binom.sf(agreements - 1, items, chance))]


def random_guesser_flags(
    figures: Sequence[WorkerFigures], *, alpha: float = 0.05, min_items: int = 30
) -> list[WorkerFlag]:
    """Workers whose leave-one-out agreement is not significantly above their chance level: an exact
    one-sided binomial test per worker with at least `min_items` scored items, against
    `chance_agreement`; cleared when the Benjamini–Hochberg adjusted p-value over all tested workers
    is <= alpha, flagged otherwise. The discovery controlled is "cleared" (the flag is the failure
    to show skill); Bonferroni over hundreds of workers would flag honest low-volume workers in
    numbers. Below `min_items` nobody is tested: an honest worker cannot show skill on so little.
    """
    tested = [worker for worker in figures if worker.loo_items >= min_items]
    if not tested:
        return []
    p_values = better_than_chance_p_values(
        [(worker.loo_agreements, worker.loo_items, worker.chance_agreement) for worker in tested]
    )
    from scipy.stats import false_discovery_control

    adjusted = false_discovery_control(p_values, method="bh")
    flags = []
    for worker, p_value, adjusted_p in zip(tested, p_values, adjusted, strict=False):
        if adjusted_p <= alpha:
            continue
        reason = (
            f"agreement with leave-one-out gold {worker.loo_agreements}/{worker.loo_items} = "
            f"{worker.loo_agreement:.3f} is not significantly above chance {worker.chance_agreement:.3f} "
            f"(one-sided binomial p = {p_value:.3g}, Benjamini-Hochberg adjusted {adjusted_p:.3g} > {alpha} "
            f"over {len(tested)} workers tested)"
        )
        flags.append(
            WorkerFlag(
                worker=worker.worker,
                kind=RANDOM_GUESSER,
                reason=reason,
                figures={
                    "loo_items": worker.loo_items,
                    "loo_agreements": worker.loo_agreements,
                    "loo_agreement": worker.loo_agreement,
                    "chance_agreement": worker.chance_agreement,
                    "p_value": float(p_value),
                    "adjusted_p_value": float(adjusted_p),
                    "alpha": alpha,
                    "workers_tested": len(tested),
                },
            )
        )
    return flags


def same_label_flags(
    figures: Sequence[WorkerFigures], *, max_label_share: float = 0.8, min_items: int = 20
) -> list[WorkerFlag]:
    """Workers who give one label to at least `max_label_share` of their items.

    No test is needed: with three roughly balanced labels an honest worker's commonest label sits
    near 40%, so 80% is far outside honest variation once there are `min_items` labels.
    """
    flags = []
    for worker in figures:
        if worker.n_labels < min_items:
            continue
        label, count = max(worker.label_counts.items(), key=lambda item: (item[1], item[0]))
        share = count / worker.n_labels
        if share < max_label_share:
            continue
        flags.append(
            WorkerFlag(
                worker=worker.worker,
                kind=SAME_LABEL,
                reason=f"{count} of {worker.n_labels} labels ({share:.0%}) are {label!r}, at or above {max_label_share:.0%}",
                figures={
                    "items": worker.n_labels,
                    "top_label_count": count,
                    "top_label_share": share,
                    "max_label_share": max_label_share,
                },
            )
        )
    return flags


def too_fast_flags(
    figures: Sequence[WorkerFigures],
    *,
    min_median_seconds: float = TOO_FAST_SECONDS,
    min_items: int = TOO_FAST_MIN_ITEMS,
) -> list[WorkerFlag]:
    """Workers whose median time per item is below `min_median_seconds`.

    The median, not the mean, so a few items left open during a break do not hide a habit of
    clicking through. 4 s default: a MultiNLI premise and hypothesis together run to about 30
    words, some 7 s at an ordinary reading speed; half of that is skimming at best.
    """
    flags = []
    for worker in figures:
        if worker.timed_items < min_items or worker.median_seconds is None:
            continue
        if worker.median_seconds >= min_median_seconds:
            continue
        flags.append(
            WorkerFlag(
                worker=worker.worker,
                kind=TOO_FAST,
                reason=(
                    f"median {worker.median_seconds:.1f} s per item over {worker.timed_items} timed items, "
                    f"below {min_median_seconds:.1f} s"
                ),
                figures={
                    "timed_items": worker.timed_items,
                    "median_seconds": worker.median_seconds,
                    "min_median_seconds": min_median_seconds,
                },
            )
        )
    return flags


def flag_workers(
    figures: Sequence[WorkerFigures],
    *,
    guesser_alpha: float = 0.05,
    guesser_min_items: int = 30,
    max_label_share: float = 0.8,
    same_label_min_items: int = 20,
    min_median_seconds: float = TOO_FAST_SECONDS,
    too_fast_min_items: int = TOO_FAST_MIN_ITEMS,
) -> list[WorkerFlag]:
    """All three flags, sorted by worker then kind; a worker can carry several."""
    flags = (
        random_guesser_flags(figures, alpha=guesser_alpha, min_items=guesser_min_items)
        + same_label_flags(figures, max_label_share=max_label_share, min_items=same_label_min_items)
        + too_fast_flags(figures, min_median_seconds=min_median_seconds, min_items=too_fast_min_items)
    )
    return sorted(flags, key=lambda flag: (flag.worker, FLAG_KINDS.index(flag.kind)))


# --- one browser, several participant ids ---------------------------------------------------

MANY_IDS = "many_ids"


def many_ids_flag(worker: WorkerId, linked_ids: Iterable[int]) -> WorkerFlag | None:
    """One browser (device cookie or session) seen under several participant ids: likely one person."""
    if not linked_ids:
        return None
    others = sorted(linked_ids)
    return WorkerFlag(
        worker=worker,
        kind=MANY_IDS,
        reason=f"Shares a browser with {len(others)} other participant id(s): {', '.join(map(str, others))}.",
        figures={"linked_ids": len(others)},
    )
