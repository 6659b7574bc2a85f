"""Give-away words (Poliak et al. 2018 §6; Gururangan et al. 2018): hypothesis words whose
presence alone predicts the label. For each word w and label l, p(l | w) is the share of
hypotheses containing w whose gold label is l; words seen in fewer than `min_count` hypotheses
are left out, since a word seen twice says nothing.
"""
from collections import Counter, defaultdict

from .data import LABELS, NO_GOLD, tokenize


def _hypothesis_and_label(row):
    """A JSONL row (dict) or a training Example."""
    if isinstance(row, dict):
        return tokenize(row.get("sentence2", "")), row.get("gold_label", NO_GOLD)
    label = LABELS[row.label] if row.label >= 0 else NO_GOLD
    return row.hypothesis, label


def giveaway_words(rows, min_count=20, top=10):
    """{label: [{"word", "p", "count", "label_count"}, ...]} best first, per label.

    Each hypothesis counts a word once. Ranked by p(label | word), then by how often the word
    occurs, so that among equally telling words the frequent (more harmful) ones come first.
    """
    word_count = Counter()
    word_label = defaultdict(Counter)
    for row in rows:
        tokens, label = _hypothesis_and_label(row)
        if label not in LABELS:
            continue
        for word in set(tokens):
            word_count[word] += 1
            word_label[word][label] += 1
    listing = {}
    for label in LABELS:
        scored = [
            {"word": w, "p": round(word_label[w][label] / n, 4), "count": n, "label_count": word_label[w][label]}
            for w, n in word_count.items()
            if n >= min_count and word_label[w][label]
        ]
        scored.sort(key=lambda item: (-item["p"], -item["count"], item["word"]))
        listing[label] = scored[:top] if top else scored
    return listing
