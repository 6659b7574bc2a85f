"""Give-away words of a snapshot's rows or training Examples (Poliak et al. 2018 §6).

The counting lives once in `corpus.giveaways` (Django-free), shared with the artifacts app's
pages; this adapts JSONL rows and training Examples to it.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.giveaways import giveaway_words as _giveaway_words

from .data import LABELS, NO_GOLD, Example, tokenize


def _hypothesis_and_label(row: Mapping[str, Any] | Example, labels: Sequence[str] = LABELS) -> tuple[list[str], str]:
    """A JSONL row (dict) or a training Example (its class index named by the snapshot's `labels`)."""
    if isinstance(row, Mapping):
        return tokenize(row.get("sentence2", "")), row.get("gold_label", NO_GOLD)
    label = labels[row.label] if row.label >= 0 else NO_GOLD
    return row.hypothesis, label


def giveaway_words(
    rows: Iterable[Mapping[str, Any] | Example],
    min_count: int = DEFAULT_MIN_COUNT,
    top: int | None = DEFAULT_TOP,
    labels: Sequence[str] = LABELS,
) -> dict[str, list[dict[str, Any]]]:
    """{label: [{"word", "p", "count", "label_count"}, ...]} best first, per label (`labels`: SnapshotData.labels)."""
    return _giveaway_words((_hypothesis_and_label(row, labels) for row in rows), min_count=min_count, top=top)
