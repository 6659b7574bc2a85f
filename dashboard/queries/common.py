"""SQL expressions and small helpers that several dashboard pages share."""

from django.db.models import QuerySet

from corpus.models import Dataset, Genre, Pair, Worker


def datasets() -> list[Dataset]:
    """Every dataset, by slug: the scope selector and the forms that pick datasets."""
    return list(Dataset.objects.order_by("slug"))


def dataset(slug: str) -> Dataset | None:
    return Dataset.objects.filter(slug=slug).first()


def genres(order: str = "slug") -> QuerySet[Genre]:
    """Every genre (a lazy queryset: a form's choices are read when it renders)."""
    return Genre.objects.order_by(order)


def workers() -> QuerySet[Worker]:
    """Every crowdworker (a lazy queryset, for a form field that takes a worker's id)."""
    return Worker.objects.all()


def pair(pk: int | str) -> Pair | None:
    return Pair.objects.select_related("premise__genre").filter(pk=pk).first()
