"""Reads of the adjudication page."""

from corpus.models import Pair


def pair_to_adjudicate(pk: int) -> Pair | None:
    """The pair a decision names (any dataset), or None."""
    return Pair.objects.filter(pk=pk).first()
