"""Reads of MPE's per-premise labels: the export's rows and the Table 4 comparison (MPE §5.2)."""

from collections.abc import Iterator, Sequence

from django.db.models import Q, QuerySet

from corpus.models import Dataset, ItemKind

from .models import PREMISE_LABELS_PER_PAIR, PremiseLabel, PremisePair
from .premise_table import PREMISES_PER_ITEM, PremiseLabelRow, Table4, table4

PAGE = 2000


def premise_label_rows(dataset: Dataset, split: str | None = None, *, page: int = PAGE) -> Iterator[PremiseLabelRow]:
    """One row per marked premise-hypothesis pair, by item (in the order they were stored) then premise index, with its judgments in
    the order they came; read by keyset pages (one query for the pairs, one for their labels)."""
    pairs = _pairs(dataset, split)
    last = (0, -1)
    while True:
        chunk = list(
            pairs.filter(Q(item_id__gt=last[0]) | Q(item_id=last[0], index__gt=last[1]))
            .select_related("item__premise")
            .order_by("item_id", "index")[:page]
        )
        if not chunk:
            return
        last = (chunk[-1].item_id, chunk[-1].index)
        labels: dict[int, list[str]] = {}
        for premise_pair_id, label in (
            PremiseLabel.objects.filter(premise_pair__in=chunk)
            .order_by("premise_pair_id", "created_at", "id")
            .values_list("premise_pair_id", "label")
        ):
            labels.setdefault(premise_pair_id, []).append(label)
        for pair in chunk:
            item = pair.item
            sentences = item.premise.sentences or [{"text": item.premise.text, "source": ""}]
            sentence = sentences[pair.index] if pair.index < len(sentences) else {"text": "", "source": ""}
            yield PremiseLabelRow(
                item_id=item.pair_id,
                premise_index=pair.index,
                premise_source=sentence.get("source", ""),
                premise=sentence.get("text", ""),
                hypothesis=item.hypothesis,
                judgments=tuple(labels.get(pair.pk, ())),
                consensus=pair.consensus,
                mpe_gold_label=item.gold_label,
            )


def premise_label_progress(dataset: Dataset, split: str | None = None) -> dict[str, int]:
    pairs = _pairs(dataset, split)
    marked = pairs.count()
    done = pairs.filter(label_count=PREMISE_LABELS_PER_PAIR).count()
    judgments = PremiseLabel.objects.filter(premise_pair__in=pairs).count()
    return {"premise_pairs": marked, "complete": done, "judgments": judgments}


def spe_table(dataset: Dataset, split: str | None = None) -> Table4:
    """Table 4 of MPE §5.2 over the items whose four premises each have three judgments. One query."""
    pairs = _pairs(dataset, split)
    items: dict[int, tuple[str, dict[int, tuple[str, int]]]] = {}
    for item_id, gold, index, consensus, count in pairs.order_by("item_id", "index").values_list(
        "item_id", "item__gold_label", "index", "consensus", "label_count"
    ):
        items.setdefault(item_id, (gold, {}))[1][index] = (consensus, count)
    complete = [
        (gold, [premises[index][0] for index in range(PREMISES_PER_ITEM)])
        for gold, premises in items.values()
        if len(premises) == PREMISES_PER_ITEM
        and set(premises) == set(range(PREMISES_PER_ITEM))
        and all(count == PREMISE_LABELS_PER_PAIR for _, count in premises.values())
    ]
    return table4(complete)


def premise_label_rows_of(dataset_slugs: Sequence[str], splits: Sequence[str] = ()) -> Iterator[PremiseLabelRow] | None:
    """The export's rows (`premise_label_rows`) of every multi-premise dataset among these (all
    datasets when none are named), dataset by dataset in slug order and, when splits are named,
    split by split; None when none of them has a per-premise judgment there."""
    datasets = Dataset.objects.filter(item_kind=ItemKind.MULTI_PREMISE).order_by("slug")
    if dataset_slugs:
        datasets = datasets.filter(slug__in=list(dataset_slugs))
    in_splits: list[str | None] = [*sorted(splits)] or [None]
    scopes = [
        (dataset, split)
        for dataset in datasets
        for split in in_splits
        if PremiseLabel.objects.filter(premise_pair__in=_pairs(dataset, split)).exists()
    ]
    if not scopes:
        return None
    return (row for dataset, split in scopes for row in premise_label_rows(dataset, split))


def _pairs(dataset: Dataset, split: str | None) -> QuerySet[PremisePair]:
    pairs = PremisePair.objects.filter(item__dataset=dataset)
    return pairs.filter(item__premise__split=split) if split else pairs
