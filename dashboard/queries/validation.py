"""The validation page: pairs by labels so far, and the agreement statistics."""

from django.db.models import Count

from corpus.agreement import agreement_stats
from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR
from corpus.selectors import pairs_in

from ..figure_cache import cached, refreshable


def label_count_distribution(dataset=None, split=None):
    """Pairs by labels so far (1–5), from the per-pair counter, never from the label table."""
    counts = dict(pairs_in(dataset, split).values_list("label_count").annotate(n=Count("id")).order_by())
    return [(labels, counts.get(labels, 0)) for labels in range(AUTHOR_POSITION, LABELS_PER_PAIR + 1)]


def validation_overview(dataset=None, split=None):
    return cached("validation", dataset, split, lambda: _validation_overview(dataset, split))


@refreshable("validation")
def _validation_overview(dataset, split):
    return {
        "label_counts": label_count_distribution(dataset, split),
        "agreement": agreement_stats(dataset=dataset, split=split),
    }
