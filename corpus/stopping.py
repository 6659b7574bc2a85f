"""Stopping rules for validation labels, in plain Python (no Django: the replay reads it).

The rules: fixed (every pair takes all five labels, the papers' protocol); decided (stop as soon
as the 3-of-5 gold cannot change: `gold_is_decided`, so the gold is exactly the one five labels
would have given); confident (stop once the posterior of the leading label under a Dawid–Skene
model reaches a threshold, unless that label is a minority: `confident_stop`; it may change gold).

`replay` plays full label sequences (SNLI, MultiNLI, ChaosNLI-style) under each rule, in their
order and in shuffled orders, and says what each saves and what it changes.
"""

import json
import math
import os
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .alpha import alpha_of_units
from .labels import AUTHOR_POSITION, GOLD_MAJORITY, LABELS, LABELS_PER_PAIR, NO_GOLD

FIXED, DECIDED, CONFIDENT = "fixed", "decided", "confident"
# The confident rule needs the author's label and at least one validator's before it may stop.
CONFIDENT_MIN_LABELS = AUTHOR_POSITION + 1
DEFAULT_THRESHOLD = 0.95


def gold_is_decided(entailment: int, neutral: int, contradiction: int, label_count: int) -> bool:
    """Whether the 3-of-5 gold of a pair with these votes can no longer change, whatever its
    remaining `LABELS_PER_PAIR - label_count` labels say (corpus.gold.gold_from_votes's rule)."""
    votes = (entailment, neutral, contradiction)
    if any(v < 0 for v in votes) or sum(votes) != label_count or label_count > LABELS_PER_PAIR:
        raise ValueError(f"votes {votes} do not add up to {label_count} labels of at most {LABELS_PER_PAIR}")
    if max(votes) >= GOLD_MAJORITY:
        return True  # no other label can reach three: 5 - 3 < 3
    remaining = LABELS_PER_PAIR - label_count
    return all(v + remaining < GOLD_MAJORITY for v in votes)


def decided_stop(entailment: int, neutral: int, contradiction: int, label_count: int) -> bool:
    """The decided rule: stop taking labels (before the fifth) once the gold is decided."""
    return label_count < LABELS_PER_PAIR and gold_is_decided(entailment, neutral, contradiction, label_count)


def majority_gold(labels: Sequence[str]) -> str:
    """The 3-of-5 gold of a label sequence (corpus.gold.gold_from_votes without an imported gold)."""
    counts = Counter(labels)
    for label in LABELS:
        if counts[label] >= GOLD_MAJORITY:
            return label
    return NO_GOLD


def leading_is_minority(leading: str, labels: Sequence[str]) -> bool:
    """Whether the leading label has fewer than half of the pair's labels."""
    return 2 * sum(1 for label in labels if label == leading) < len(labels)


def confident_stop(
    posterior: Mapping[str, float], labels: Sequence[str], threshold: float, *, max_labels: int = LABELS_PER_PAIR
) -> bool:
    """The confident rule: stop at `max_labels`, or before once the leading label's posterior
    reaches `threshold` with at least one validation label, unless that label is a minority of
    the pair's labels."""
    if len(labels) >= min(max_labels, LABELS_PER_PAIR):
        return len(labels) < LABELS_PER_PAIR
    if len(labels) < CONFIDENT_MIN_LABELS or not posterior:
        return False
    leading = max(posterior, key=lambda label: posterior[label])
    return posterior[leading] >= threshold and not leading_is_minority(leading, labels)


# --- a pooled Dawid–Skene model (one confusion matrix for every labeller) ----------------------


@dataclass
class PooledModel:
    """Class priors and one confusion matrix shared by every labeller: what a replay without
    worker ids can fit (the aggregation task fits one matrix per worker)."""

    prior: dict[str, float]
    confusion: dict[str, dict[str, float]]  # true label -> given label -> probability

    def posterior(self, labels: Sequence[str]) -> dict[str, float]:
        logs = {}
        for truth in LABELS:
            value = math.log(self.prior[truth])
            for given in labels:
                value += math.log(self.confusion[truth][given])
            logs[truth] = value
        top = max(logs.values())
        weights = {truth: math.exp(value - top) for truth, value in logs.items()}
        total = sum(weights.values())
        return {truth: weight / total for truth, weight in weights.items()}


def fit_pooled_dawid_skene(
    sequences: Iterable[Sequence[str]], *, iterations: int = 50, smoothing: float = 0.01
) -> PooledModel:
    """EM for the pooled model, started from the majority vote of each item's labels. An item's
    posterior depends on its label counts alone, so items are grouped by their counts, each group
    weighed by its size."""
    groups = Counter(tuple(Counter(seq)[label] for label in LABELS) for seq in sequences if seq)
    items = [(dict(zip(LABELS, key, strict=True)), size) for key, size in groups.items()]
    posteriors = []
    for counts, _ in items:
        total = sum(counts.values())
        posteriors.append({label: counts[label] / total for label in LABELS})
    model = PooledModel(prior={}, confusion={})
    for _ in range(iterations):
        prior: dict[str, float] = dict.fromkeys(LABELS, smoothing)
        confusion: dict[str, dict[str, float]] = {truth: dict.fromkeys(LABELS, smoothing) for truth in LABELS}
        for (counts, size), post in zip(items, posteriors, strict=True):
            for truth in LABELS:
                prior[truth] += post[truth] * size
                for given, n in counts.items():
                    confusion[truth][given] += post[truth] * n * size
        mass = math.fsum(prior.values())
        model = PooledModel(
            prior={truth: value / mass for truth, value in prior.items()},
            confusion={
                truth: {given: value / sum(row.values()) for given, value in row.items()}
                for truth, row in confusion.items()
            },
        )
        posteriors = [model.posterior([label for label, n in counts.items() for _ in range(n)]) for counts, _ in items]
    return model


# --- the replay ---------------------------------------------------------------------------------


def fleiss_kappa(rows: Sequence[Sequence[str]], categories: Sequence[str] = LABELS) -> float | None:
    """Fleiss' κ of items that each have the same number of labels (statsmodels' formula)."""
    if not rows:
        return None
    raters = len(rows[0])
    total = len(rows) * raters
    sums = dict.fromkeys(categories, 0)
    agreement = 0.0
    for row in rows:
        counts = Counter(row)
        for label in categories:
            sums[label] += counts[label]
        agreement += (sum(n * n for n in counts.values()) - raters) / (raters * (raters - 1))
    p_bar = agreement / len(rows)
    p_e = sum((n / total) ** 2 for n in sums.values())
    return None if p_e >= 1 else (p_bar - p_e) / (1 - p_e)


@dataclass
class ReplayResult:
    rule: str
    threshold: float | None
    order: str  # "file" or "shuffled (seed s)"
    pairs: int = 0
    labels_full: int = 0  # every label of the replayed pairs (five a pair)
    labels_used: int = 0
    stopped_early: int = 0
    gold_changed: int = 0
    full_label_rows: list[list[str]] = field(default_factory=list, repr=False)
    # Every replayed pair's labels up to its stop (α reads them all, κ the full rows only).
    used_label_rows: list[list[str]] = field(default_factory=list, repr=False)

    @property
    def validation_labels_full(self) -> int:
        return self.labels_full - self.pairs * AUTHOR_POSITION

    @property
    def labels_saved(self) -> int:
        return self.labels_full - self.labels_used

    @property
    def saved_share(self) -> float:
        """Share of the validation labels (all but the author's) saved."""
        return self.labels_saved / self.validation_labels_full if self.validation_labels_full else 0.0

    @property
    def full_label_pairs(self) -> int:
        return len(self.full_label_rows)

    @property
    def kappa_full(self) -> float | None:
        return fleiss_kappa(self.full_label_rows)

    @property
    def alpha_all(self) -> float | None:
        """Krippendorff's α over every pair's labels up to its stop (pairs with two or more)."""
        return alpha_of_units(self.used_label_rows, LABELS).alpha

    @property
    def alpha_full(self) -> float | None:
        """Krippendorff's α over the pairs that still took five labels (κ's pairs)."""
        return alpha_of_units(self.full_label_rows, LABELS).alpha

    def as_dict(self) -> dict[str, object]:
        return {
            "rule": self.rule,
            "threshold": self.threshold,
            "order": self.order,
            "pairs": self.pairs,
            "validation_labels": self.validation_labels_full,
            "labels_saved": self.labels_saved,
            "saved_share": self.saved_share,
            "stopped_early": self.stopped_early,
            "gold_changed": self.gold_changed,
            "full_label_pairs": self.full_label_pairs,
            "kappa_full": self.kappa_full,
            "alpha_all": self.alpha_all,
            "alpha_full": self.alpha_full,
        }


def read_label_sequences(path: str | os.PathLike[str]) -> list[list[str]]:
    """Each pair's label sequence, in the file's order, from SNLI / MultiNLI / ChaosNLI-style JSON
    lines (`annotator_labels`, or `label_sequence`): what `replay` takes. A label outside the three
    (an empty one, in SNLI's files) is left out of its sequence; a blank line is no pair."""
    sequences = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            labels = row.get("annotator_labels") or row.get("label_sequence") or []
            sequences.append([label for label in labels if label in LABELS])
    return sequences


def replay_sequence(
    labels: Sequence[str], rule: str, *, threshold: float = DEFAULT_THRESHOLD, model: PooledModel | None = None
) -> tuple[int, str]:
    """(labels used, gold label at the stop) of one full sequence replayed under a rule."""
    if rule == FIXED:
        return len(labels), majority_gold(labels)
    for used in range(1, len(labels) + 1):
        seen = labels[:used]
        if rule == DECIDED:
            counts = Counter(seen)
            e, n, c = (counts[label] for label in LABELS)
            if decided_stop(e, n, c, used):
                return used, majority_gold(seen) if max(e, n, c) >= GOLD_MAJORITY else NO_GOLD
        elif rule == CONFIDENT:
            if model is None:
                raise ValueError("the confident rule needs a fitted model")
            posterior = model.posterior(seen)
            if confident_stop(posterior, seen, threshold):
                return used, max(posterior, key=lambda label: posterior[label])
        else:
            raise ValueError(f"unknown rule {rule!r}")
    return len(labels), majority_gold(labels)


def replay(
    sequences: Sequence[Sequence[str]],
    *,
    rules: Sequence[tuple[str, float | None]] = ((FIXED, None), (DECIDED, None), (CONFIDENT, 0.9), (CONFIDENT, 0.99)),
    shuffles: int = 0,
    seed: int = 0,
    model: PooledModel | None = None,
) -> list[ReplayResult]:
    """Replay the five-label sequences (others are left out) under each rule, in file order and
    in `shuffles` shuffled orders (each sequence shuffled with one seeded generator). Gold changes
    are counted against each sequence's own five-label 3-of-5 gold."""
    full = [list(seq) for seq in sequences if len(seq) == LABELS_PER_PAIR]
    if model is None and any(rule == CONFIDENT for rule, _ in rules):
        model = fit_pooled_dawid_skene(full)
    orders: list[tuple[str, list[list[str]]]] = [("file", full)]
    for index in range(shuffles):
        rng = random.Random(seed + index)
        shuffled = []
        for seq in full:
            copy = list(seq)
            rng.shuffle(copy)
            shuffled.append(copy)
        orders.append((f"shuffled (seed {seed + index})", shuffled))
    results = []
    for order, seqs in orders:
        for rule, threshold in rules:
            result = ReplayResult(rule=rule, threshold=threshold, order=order)
            for seq in seqs:
                used, gold = replay_sequence(seq, rule, threshold=threshold or DEFAULT_THRESHOLD, model=model)
                result.pairs += 1
                result.labels_full += len(seq)
                result.labels_used += used
                result.used_label_rows.append(seq[:used])
                if used < len(seq):
                    result.stopped_early += 1
                else:
                    result.full_label_rows.append(seq)
                if gold != majority_gold(seq):
                    result.gold_changed += 1
            results.append(result)
    return results


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_results(results: Sequence[ReplayResult]) -> str:
    lines = [
        f"{'order':<20} {'rule':<16} {'pairs':>6} {'saved':>7} {'saved %':>8} {'stopped':>8} "
        f"{'gold chg':>8} {'5-label':>8} {'kappa':>7} {'alpha all':>9} {'alpha 5':>7}"
    ]
    for r in results:
        name = r.rule if r.threshold is None else f"{r.rule} {r.threshold:g}"
        kappa = r.kappa_full
        lines.append(
            f"{r.order:<20} {name:<16} {r.pairs:>6} {r.labels_saved:>7} {100 * r.saved_share:>7.1f}% "
            f"{r.stopped_early:>8} {r.gold_changed:>8} {r.full_label_pairs:>8} "
            f"{'n/a' if kappa is None else f'{kappa:.3f}':>7} "
            f"{_figure(r.alpha_all):>9} {_figure(r.alpha_full):>7}"
        )
    return "\n".join(lines)
