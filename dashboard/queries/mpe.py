"""The multi-premise (MPE) page: its datasets, the items with the most word overlap, one item."""

from typing import Any

from corpus.models import Dataset, ItemKind, Pair
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import adjudication_queue

OVERLAP_SHOWN = 20


def multi_premise_datasets(scope: Scope = EVERYTHING) -> list[Dataset]:
    """The chosen dataset when it holds multi-premise items, else every such dataset of the scope."""
    chosen = scope.one
    if chosen is not None:
        return [chosen] if chosen.item_kind == ItemKind.MULTI_PREMISE else []
    return list(scope.datasets().filter(item_kind=ItemKind.MULTI_PREMISE))


def highest_overlap(dataset: Dataset, *, limit: int = OVERLAP_SHOWN) -> list[Pair]:
    return list(
        Pair.objects.filter(dataset=dataset, word_overlap__isnull=False)
        .select_related("premise")
        .order_by("-word_overlap", "pk")[:limit]
    )


def multi_premise_item(pair_id: int | str) -> Pair | None:
    return Pair.objects.select_related("dataset").filter(pk=pair_id, dataset__item_kind=ItemKind.MULTI_PREMISE).first()


def adjudication_reason(pair: Pair) -> str:
    """Why the item is in the adjudication queue ("" when it is not)."""
    queued = adjudication_queue(Scope.of_dataset(pair.dataset), pending_only=False).filter(pk=pair.pk).first()
    # An annotation of the queue, which the stubs do not see on Pair.
    return str(getattr(queued, "adjudication_reason", "")) if queued else ""


def premise_labels(dataset: Dataset, split: str | None = None) -> dict[str, Any] | None:
    """Per-premise (SPE) label collection and MPE's Table 4 for the item set, or None when none of
    its items are marked for per-premise labels."""
    from validation.premise_label_selectors import premise_label_progress, spe_table

    progress = premise_label_progress(dataset, split)
    if not progress["premise_pairs"]:
        return None
    return {"progress": progress, "table": spe_table(dataset, split)}
