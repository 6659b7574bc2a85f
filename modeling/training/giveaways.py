"""Give-away words of a snapshot's rows or training Examples (Poliak et al. 2018 §6).

The counting lives once in `corpus.giveaways` (Django-free), shared with the artifacts app's
pages; this adapts JSONL rows and training Examples to it.
"""

from corpus.giveaways import DEFAULT_MIN_COUNT, DEFAULT_TOP
from corpus.giveaways import giveaway_words as _giveaway_words

from .data import LABELS, NO_GOLD, tokenize


def _hypothesis_and_label(row, labels=LABELS):
    """A JSONL row (dict) or a training Example (its class index named by the snapshot's `labels`)."""
    if isinstance(row, dict):
        return tokenize(row.get("sentence2", "")), row.get("gold_label", NO_GOLD)
    label = labels[row.label] if row.label >= 0 else NO_GOLD
    return row.hypothesis, label


def giveaway_words(rows, min_count=DEFAULT_MIN_COUNT, top=DEFAULT_TOP, labels=LABELS):
    """{label: [{"word", "p", "count", "label_count"}, ...]} best first, per label (`labels`: SnapshotData.labels)."""
    return _giveaway_words((_hypothesis_and_label(row, labels) for row in rows), min_count=min_count, top=top)
