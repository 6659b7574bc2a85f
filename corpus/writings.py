"""A premise's writings: how many its pairs make, and the pairIDs of the pairs of a new one.

A writing is a hypothesis of each label; the writing claim serves a premise while its
`writings_done` is under its dataset's writings_per_premise. A corpus import brings writings too,
so every import counts them (`count_writings_of_pairs`). An imported corpus may hold the very ids
a task would give (MultiNLI's "101e"), so every task takes its ids from `unused_pair_ids`.
"""

from collections.abc import Iterable, Sequence

from django.db.models import Count, F, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce, Least

from .labels import LABELS
from .models import Pair, Premise

FIRST_SUFFIX = 2  # "101e" taken: "101e-2", then "101e-3", ...


def _complete_writings() -> Least:
    """A premise's complete writings among its pairs, as SQL: its fewest pairs of one author label."""

    def written(label: str) -> Coalesce:
        of_label = Pair.objects.filter(premise=OuterRef("pk"), author_label=label).order_by()
        counted = of_label.values("premise").annotate(n=Count("pk")).values("n")
        return Coalesce(Subquery(counted, output_field=IntegerField()), 0)

    return Least(*(written(label) for label in LABELS))


def count_writings_of_pairs(premise_ids: Iterable[int] | None = None) -> int:
    """Raise the premises' `writings_done` to the complete writings among their pairs (every
    premise when None), in the caller's transaction; returns how many moved. Never lowers it: an
    adversarial writing is one pair (or none), and the tasks count their own."""
    premises = Premise.objects.all() if premise_ids is None else Premise.objects.filter(pk__in=list(premise_ids))
    complete = _complete_writings()
    return premises.alias(complete=complete).filter(writings_done__lt=F("complete")).update(writings_done=complete)


def unused_pair_ids(dataset_id: int, wanted: Sequence[str]) -> list[str]:
    """`wanted` as they are when the dataset holds none of them, else all of them with the first
    suffix "-2", "-3", ... that none is taken with. Call it in the transaction that inserts the
    pairs, under the lock of their premise, so two submits of one premise choose one after the other.
    """
    wanted = list(wanted)
    if len(set(wanted)) != len(wanted):
        raise ValueError(f"the pairIDs of one call must differ: {wanted}")
    candidates = wanted
    suffix = FIRST_SUFFIX
    while Pair.objects.filter(dataset_id=dataset_id, pair_id__in=candidates).exists():
        candidates = [f"{pair_id}-{suffix}" for pair_id in wanted]
        suffix += 1
    return candidates
