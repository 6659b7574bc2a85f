"""Accuracy per split file, matched / mismatched, per genre, per label, and the confusion matrix.

Pairs whose gold label is '-' (no label reached three votes) are not scored: MultiNLI and SNLI
exclude them from evaluation too. Their count is reported as `excluded_no_gold`.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .data import LABELS, NO_LABEL, Example

# {split: (its examples, the class index predicted for each)}
Predictions = Mapping[str, tuple[Sequence[Example], Sequence[int]]]


def _ratio(correct: int, n: int) -> float | None:
    return round(correct / n, 6) if n else None


def accuracy_report(
    examples: Sequence[Example], predictions: Sequence[int], labels: Sequence[str] = LABELS
) -> dict[str, Any]:
    """One group of pairs: accuracy, per genre, per gold label (recall), confusion gold × predicted.

    `labels`: class index -> label name, the snapshot's scheme (three-way unless it says otherwise)."""
    LABELS = labels
    n = correct = excluded = 0
    by_genre: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_label: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
    confusion = [[0] * len(LABELS) for _ in LABELS]
    for ex, predicted in zip(examples, predictions, strict=True):
        if ex.label == NO_LABEL:
            excluded += 1
            continue
        hit = int(predicted == ex.label)
        n += 1
        correct += hit
        genre = ex.genre or "unknown"
        by_genre[genre][0] += 1
        by_genre[genre][1] += hit
        by_label[LABELS[ex.label]][0] += 1
        by_label[LABELS[ex.label]][1] += hit
        confusion[ex.label][int(predicted)] += 1
    return {
        "n": n,
        "correct": correct,
        "accuracy": _ratio(correct, n),
        "excluded_no_gold": excluded,
        "per_genre": {g: {"n": c[0], "accuracy": _ratio(c[1], c[0])} for g, c in sorted(by_genre.items())},
        "per_label": {
            label: {"n": by_label[label][0], "accuracy": _ratio(by_label[label][1], by_label[label][0])}
            for label in LABELS
        },
        "confusion": {"rows": "gold", "columns": "predicted", "labels": list(LABELS), "matrix": confusion},
    }


LABEL_LETTERS = "enc"  # entailment, neutral, contradiction (two-way: e entailed, n not-entailed); '-' for no gold
NO_GOLD_LETTER = "-"


def pair_predictions(examples: Sequence[Example], predictions: Sequence[int]) -> dict[str, Any]:
    """Per pair, compactly: its pairID, the gold label and the prediction, one letter each, which the
    artifacts app joins to the pairs' tags (MultiNLI Table 6): the run needs no database for that."""
    return {
        "pair_ids": [ex.pair_id for ex in examples],
        "gold": "".join(LABEL_LETTERS[ex.label] if ex.label != NO_LABEL else NO_GOLD_LETTER for ex in examples),
        "predicted": "".join(LABEL_LETTERS[int(p)] for p in predictions),
    }


def majority_baseline(
    train_labels: Iterable[int], predictions_by_split: Predictions, labels: Sequence[str] = LABELS
) -> dict[str, Any] | None:
    """The most frequent training label and its accuracy on the same evaluation files, so a
    hypothesis-only run reports the majority class beside itself (Poliak et al. 2018, Table 2)."""
    counts = Counter(label for label in train_labels if label != NO_LABEL)
    if not counts:
        return None
    label = min(counts, key=lambda index: (-counts[index], index))
    accuracy = {}
    for split, (examples, _) in predictions_by_split.items():
        scored = [ex.label for ex in examples if ex.label != NO_LABEL]
        accuracy[split] = _ratio(sum(1 for gold in scored if gold == label), len(scored))
    return {"label": labels[label], "accuracy": accuracy}


def summarize(predictions_by_split: Predictions, labels: Sequence[str] = LABELS) -> dict[str, Any]:
    """`{split: (examples, predictions)}` → the results stored on a TrainingRun.

    `accuracy` maps each split file to its accuracy; `dev` / `test` pool a phase's files (so
    per-genre figures of a MultiNLI snapshot cover matched and mismatched genres at once);
    `matched` / `mismatched` name the test (and dev) accuracy the way MultiNLI Table 4 does.
    """
    splits = {split: accuracy_report(ex, pred, labels) for split, (ex, pred) in predictions_by_split.items()}
    results: dict[str, Any] = {
        "splits": splits,
        "accuracy": {split: r["accuracy"] for split, r in splits.items()},
        "predictions": {split: pair_predictions(ex, pred) for split, (ex, pred) in predictions_by_split.items()},
    }
    for phase in ("dev", "test"):
        pooled_ex: list[Example] = []
        pooled_pred: list[int] = []
        for split, (ex, pred) in predictions_by_split.items():
            if split == phase or split.startswith(phase + "_"):
                pooled_ex += ex
                pooled_pred += list(pred)
        if pooled_ex:
            results[phase] = accuracy_report(pooled_ex, pooled_pred, labels)
    for kind in ("matched", "mismatched"):
        results[kind] = {p: splits[f"{p}_{kind}"]["accuracy"] for p in ("dev", "test") if f"{p}_{kind}" in splits}
    return results
