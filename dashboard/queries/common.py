"""SQL expressions and small helpers that several dashboard pages share."""

from corpus.models import Dataset, Genre, Worker
from corpus.tallies import word_count  # noqa: F401 (defined once, in the core: the tallies count words too)


def ratio(part, whole):
    return part / whole if whole else None


def datasets():
    """Every dataset, by slug: the scope selector and the forms that pick datasets."""
    return list(Dataset.objects.order_by("slug"))


def genres(order="slug"):
    """Every genre (a lazy queryset: a form's choices are read when it renders)."""
    return Genre.objects.order_by(order)


def workers():
    """Every crowdworker (a lazy queryset, for a form field that takes a worker's id)."""
    return Worker.objects.all()
