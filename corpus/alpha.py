"""Krippendorff's α from vote histograms, in plain Python (no Django: the stopping replay reads it).

α (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability") takes any number of labels
per unit: a pair with m ≥ 2 labels contributes its m(m−1) ordered label pairs, each weighted
1/(m−1), to the coincidence matrix o; pairs with fewer than two labels are not pairable and left
out. With n_c = Σ_k o_ck, n = Σ_c n_c and a distance δ²,

    α = 1 − (n − 1) · Σ_ck o_ck δ²(c, k) / Σ_ck n_c n_k δ²(c, k).

A unit enters only through how many labels each category got (its votes), so the input is a
histogram: (votes per category, number of units with exactly those votes). The database hands
that over in one grouped read (`corpus.agreement.krippendorff_alpha`: the maintained tallies
group pairs by their vote counters already), a few hundred rows whatever the corpus's size.
Sums are exact (fractions) until the last division, so the figure does not depend on row order.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

NOMINAL, ORDINAL = "nominal", "ordinal"
METRICS = (NOMINAL, ORDINAL)

# (labels per category of one unit, in a fixed category order; how many units have those labels)
VoteRow = tuple[Sequence[int], int]


@dataclass(frozen=True)
class Alpha:
    """α and what it is over: `pairs` with at least two labels (of `all_pairs` in scope) and the
    `labels` they hold (n, the pairable values)."""

    alpha: float | None
    pairs: int
    labels: int
    all_pairs: int

    @property
    def share(self) -> float | None:
        """The share of the scope's pairs that α covers."""
        return self.pairs / self.all_pairs if self.all_pairs else None

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            "alpha": self.alpha,
            "pairs": self.pairs,
            "labels": self.labels,
            "all_pairs": self.all_pairs,
            "share": self.share,
        }


def coincidences(rows: Iterable[VoteRow], categories: int) -> tuple[list[list[Fraction]], int, int]:
    """(the coincidence matrix o, pairable units, all units) of a vote histogram."""
    # Integer sums per number of labels m, divided by m − 1 once at the end.
    by_size: dict[int, list[list[int]]] = defaultdict(lambda: [[0] * categories for _ in range(categories)])
    pairable = units = 0
    for votes, count in rows:
        if len(votes) != categories:
            raise ValueError(f"a vote row has {len(votes)} categories, expected {categories}")
        if count <= 0:
            continue
        units += count
        size = sum(votes)
        if size < 2:
            continue
        pairable += count
        sums = by_size[size]
        for c, n_c in enumerate(votes):
            if not n_c:
                continue
            for k, n_k in enumerate(votes):
                sums[c][k] += count * n_c * (n_k - (c == k))
    matrix = [[Fraction(0)] * categories for _ in range(categories)]
    for size, sums in by_size.items():
        for c in range(categories):
            for k in range(categories):
                if sums[c][k]:
                    matrix[c][k] += Fraction(sums[c][k], size - 1)
    return matrix, pairable, units


def _distance(metric: str, marginals: Sequence[Fraction]) -> list[list[Fraction]]:
    """δ²(c, k) between category indices. Nominal: 0 on the diagonal, 1 elsewhere. Ordinal
    (ranks in category order): (Σ_{g=c..k} n_g − (n_c + n_k)/2)², Krippendorff's ordinal metric."""
    size = len(marginals)
    if metric == NOMINAL:
        return [[Fraction(int(c != k)) for k in range(size)] for c in range(size)]
    if metric == ORDINAL:
        table = [[Fraction(0)] * size for _ in range(size)]
        for c in range(size):
            for k in range(size):
                low, high = min(c, k), max(c, k)
                between = sum(marginals[low : high + 1], Fraction(0)) - (marginals[c] + marginals[k]) / 2
                table[c][k] = between * between
        return table
    raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")


def alpha_from_votes(rows: Iterable[VoteRow], categories: int, metric: str = NOMINAL) -> Alpha:
    """Krippendorff's α of a vote histogram (see the module's docstring). `alpha` is None where
    it is undefined: fewer than two pairable labels, or every pairable label in one category
    (no expected disagreement)."""
    matrix, pairable, units = coincidences(rows, categories)
    marginals = [sum(row, Fraction(0)) for row in matrix]
    total = sum(marginals, Fraction(0))
    labels = int(total)  # Σ o = Σ m_u over pairable units: a whole number
    distance = _distance(metric, marginals)
    observed = sum((matrix[c][k] * distance[c][k] for c in range(categories) for k in range(categories)), Fraction(0))
    expected = sum(
        (marginals[c] * marginals[k] * distance[c][k] for c in range(categories) for k in range(categories)),
        Fraction(0),
    )
    if total < 2 or expected == 0:
        return Alpha(None, pairable, labels, units)
    return Alpha(float(1 - (total - 1) * observed / expected), pairable, labels, units)


def votes_of(labels: Sequence[object], categories: Sequence[object]) -> tuple[int, ...]:
    """One unit's votes per category from its labels (labels outside `categories` are left out)."""
    return tuple(sum(1 for label in labels if label == category) for category in categories)


def alpha_of_units(units: Iterable[Sequence[object]], categories: Sequence[object], metric: str = NOMINAL) -> Alpha:
    """α of units given as their label lists (the replay's sequences, tests): a histogram first."""
    histogram: dict[tuple[int, ...], int] = defaultdict(int)
    for labels in units:
        histogram[votes_of(labels, categories)] += 1
    return alpha_from_votes(histogram.items(), len(categories), metric)
