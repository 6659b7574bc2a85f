"""The papers' gold-label rule on plain label lists (MultiNLI §2.1, SNLI §2.2).

A pair's gold label is the label chosen by at least 3 of its 5 labels (the author's and four
validators'), else NO_GOLD ("-"). The Django app has the same rule over vote counters and as SQL
(validation/gold.py); this copy works on lists so that the statistics in this package need no
database and no Django.
"""

from collections import Counter
from collections.abc import Sequence

LABELS = ("entailment", "neutral", "contradiction")
NO_GOLD = "-"
GOLD_MIN_VOTES = 3


def gold_label(labels: Sequence[str], min_votes: int = GOLD_MIN_VOTES) -> str:
    """The label given at least `min_votes` times, else NO_GOLD.

    `min_votes` is an absolute count, not a share: 3 of 5 in the papers, and the same 3 of the
    remaining 4 when one label is left out. With min_votes > len(labels) / 2 at most one label
    can reach it, so the answer never depends on the order of `labels`.
    """
    if min_votes <= len(labels) / 2:
        raise ValueError(
            f"min_votes={min_votes} is no majority of {len(labels)} labels: two labels could both reach it"
        )
    if not labels:
        return NO_GOLD
    label, votes = Counter(labels).most_common(1)[0]
    return label if votes >= min_votes else NO_GOLD
