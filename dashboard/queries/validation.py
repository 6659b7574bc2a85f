"""The validation page: pairs by labels so far, and the agreement statistics."""

from typing import Any

from corpus import tallies
from corpus.agreement import agreement_stats, stopped_early_stats
from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import labels_scheme_of_scope

from ..figure_cache import cached, refreshable


def label_count_distribution(scope: Scope = EVERYTHING) -> list[tuple[int, int]]:
    """Pairs by labels so far (1–5), summed from the maintained tallies, not a scan of the pairs."""
    counts: dict[int, int] = {}
    # Over the pairs the agreement figures cover (every dataset: the three-way ones), so the tiles add up.
    for labels, n in tallies.pair_counts(scope, by=("label_count",), scheme=labels_scheme_of_scope(scope)):
        counts[labels] = counts.get(labels, 0) + n
    # Pairs with no label at all (an import without labels) get a tile of their own, so the tiles
    # always add up to the page's pair count.
    first = 0 if counts.get(0) else AUTHOR_POSITION
    return [(labels, counts.get(labels, 0)) for labels in range(first, LABELS_PER_PAIR + 1)]


def validation_overview(scope: Scope = EVERYTHING) -> dict[str, Any]:
    return cached("validation", scope, lambda: _validation_overview(scope))


@refreshable("validation")
def _validation_overview(scope: Scope) -> dict[str, Any]:
    return {
        "label_counts": label_count_distribution(scope),
        "agreement": agreement_stats(scope),
        "stopping": stopped_early_stats(scope),
    }
