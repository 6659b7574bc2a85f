"""Give-away words (Poliak et al. 2018 §6): hypothesis words whose presence alone predicts the label.

For each word w and label l, p(l | w) is the share of hypotheses containing w whose label is l.
Words seen in fewer than `min_count` hypotheses are left out: a word seen twice says nothing.
The defaults are the paper's (Figure 13: words occurring at least five times, top 10 per label).

Plain Python, free of Django like `corpus.labels`: training on a GPU node (modeling) and the
artifacts app (the web side) both count with this one function.
"""

import heapq
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .labels import LABELS, NO_GOLD

DEFAULT_MIN_COUNT = 5
DEFAULT_TOP = 10
_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def tokenize(text: str | None) -> list[str]:
    """Lowercase words (keeping clitics like n't / 's together) and single punctuation marks."""
    return _TOKEN.findall((text or "").lower())


def counted_label(gold_label: str, author_label: str, label_count: int) -> str:
    """The label a hypothesis is counted under: its gold label; for a pair nobody has validated
    yet (only the author's label, as most written train pairs), the label it was written for.
    A validated pair without gold (no 3 of 5) is not counted (NO_GOLD)."""
    if gold_label in LABELS:
        return gold_label
    return author_label if label_count <= 1 else NO_GOLD


def words_of(tokens: Iterable[str]) -> set[str]:
    """The distinct words of a tokenised sentence: each counts once per hypothesis, marks not at all."""
    return {token for token in tokens if any(ch.isalnum() for ch in token)}


def word_and_label_counts(
    labelled_hypotheses: Iterable[tuple[Sequence[str], str]],
) -> tuple[Counter[str], defaultdict[str, Counter[str]]]:
    """(per word: hypotheses containing it, per word: Counter of their labels) over
    (tokens, label) items; items whose label is not one of the three are skipped."""
    word_count: Counter[str] = Counter()
    word_label: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for tokens, label in labelled_hypotheses:
        if label not in LABELS:
            continue
        for word in words_of(tokens):
            word_count[word] += 1
            word_label[word][label] += 1
    return word_count, word_label


def giveaway_words(
    labelled_hypotheses: Iterable[tuple[Sequence[str], str]],
    *,
    min_count: int = DEFAULT_MIN_COUNT,
    top: int | None = DEFAULT_TOP,
) -> dict[str, list[dict[str, Any]]]:
    """{label: [{"word", "p", "count", "label_count"}, ...]} best first, per label, over
    (tokens, label) items.

    Ranked by p(label | word), then by how often the word occurs, so that among equally telling
    words the frequent (more harmful) ones come first. `top=None` lists every word.
    """
    word_count, word_label = word_and_label_counts(labelled_hypotheses)
    return ranked(word_count, word_label, min_count=min_count, top=top)


def ranked(
    word_count: Mapping[str, int],
    word_label: Mapping[str, Mapping[str, int]],
    *,
    min_count: int = DEFAULT_MIN_COUNT,
    top: int | None = DEFAULT_TOP,
) -> dict[str, list[dict[str, Any]]]:
    """The listing of `giveaway_words` from the counts of `word_and_label_counts` (or the same counts summed
    from a maintained tally: corpus.tallies.word_counts)."""
    listing: dict[str, list[dict[str, Any]]] = {}
    counted = [(w, n, word_label[w]) for w, n in word_count.items() if n >= min_count]
    for label in LABELS:
        # (-p, -count, word, label count): the order of the listing, as plain tuples; the top
        # ones only become dicts (a corpus has tens of thousands of counted words, a page shows 10).
        scored = [(-round(c[label] / n, 4), -n, w, c[label]) for w, n, c in counted if c.get(label)]
        best = heapq.nsmallest(top, scored) if top else sorted(scored)
        listing[label] = [{"word": w, "p": -p, "count": -n, "label_count": k} for p, n, w, k in best]
    return listing
