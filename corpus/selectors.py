"""Reads of the core that several apps share: which dataset a slug names, the pairs and premises in scope."""

from django.core.cache import cache
from django.db.models import Case, Count, Q, QuerySet, Value, When

from .gold import (
    ENTAILMENT_CONTRADICTION_3_2,
    TWO_TWO_ONE,
    ItemSetStatistics,
    adjudication_case,
    gold_expression,
    majority_expression,
)
from .labels import CONTRADICTION, ENTAILMENT, NEUTRAL
from .models import Adjudication, AdjudicationSource, Dataset, Genre, Pair, Premise


def resolve_dataset(dataset: Dataset | str | None) -> Dataset | None:
    """A Dataset from a Dataset, its slug or None (None stays None: every dataset)."""
    if dataset is None or isinstance(dataset, Dataset):
        return dataset
    return Dataset.objects.get(slug=dataset)


def pairs_in(dataset: Dataset | str | None = None, split: str | None = None) -> QuerySet[Pair]:
    """Pairs of a dataset (a Dataset or slug; None: all) and split (None: all), unordered."""
    pairs = Pair.objects.all()
    dataset = resolve_dataset(dataset)
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    if split:
        pairs = pairs.filter(premise__split=split)
    return pairs.order_by()


def premises_in(dataset: Dataset | str | None = None, split: str | None = None) -> QuerySet[Premise]:
    premises = Premise.objects.all()
    dataset = resolve_dataset(dataset)
    if dataset is not None:
        premises = premises.filter(dataset=dataset)
    if split:
        premises = premises.filter(split=split)
    return premises.order_by()


GENRE_NAMES_CACHE_KEY = "corpus:genre-names"


def genre_names() -> dict[str, str]:
    """{genre slug: display name}: pages show names ("Face-to-face"), files and URLs keep slugs.

    Kept a minute in the cache: a page may ask for many names, and genres are renamed rarely.
    """
    names: dict[str, str] | None = cache.get(GENRE_NAMES_CACHE_KEY)
    if names is None:
        names = dict(Genre.objects.values_list("slug", "name"))
        cache.set(GENRE_NAMES_CACHE_KEY, names, 60)
    return names


# --- multi-premise items (MPE, Lai et al. 2017 §4.2) ----------------------------------------------

JUDGMENTS_PER_ITEM = 5


def _judged(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    return pairs.filter(label_count=JUDGMENTS_PER_ITEM)


def adjudication_queue(
    dataset: Dataset | str | None = None, split: str | None = None, *, pending_only: bool = True
) -> QuerySet[Pair]:
    """Judged items in an adjudication case, each annotated with `adjudication_reason`; oldest first.

    `pending_only` leaves out the items a researcher has already decided (a gold label taken from
    an imported file does not count as a researcher's decision: it stays in the queue to be checked).
    """
    two_two_one, torn = adjudication_case()
    pairs = _judged(pairs_in(dataset, split)).filter(two_two_one | torn)
    if pending_only:
        pairs = pairs.exclude(
            pk__in=Adjudication.objects.filter(source=AdjudicationSource.RESEARCHER).values("pair_id")
        )
    return (
        pairs.annotate(
            adjudication_reason=Case(
                When(two_two_one, then=Value(TWO_TWO_ONE)), default=Value(ENTAILMENT_CONTRADICTION_3_2)
            )
        )
        .select_related("premise")
        .order_by("pk")
    )


def mpe_statistics(dataset: Dataset | str | None = None, split: str | None = None) -> ItemSetStatistics:
    """Label distribution, unanimous share and share of gold equal to the judgments' majority, for
    the judged (five-judgment) items of a dataset and split; one aggregate query and one count."""
    pairs = _judged(pairs_in(dataset, split))
    votes = {ENTAILMENT: "entailment_votes", NEUTRAL: "neutral_votes", CONTRADICTION: "contradiction_votes"}
    figures = pairs.aggregate(
        items=Count("pk"),
        unanimous=Count("pk", filter=Q(entailment_votes=5) | Q(neutral_votes=5) | Q(contradiction_votes=5)),
        with_majority=Count("pk", filter=majority_expression()),
        gold_equals_majority=Count("pk", filter=majority_expression() & Q(gold_label=gold_expression())),
        adjudicated=Count("pk", filter=~Q(adjudicated_label="")),
        **{f"gold_{label}": Count("pk", filter=Q(gold_label=label)) for label in votes},
    )
    return ItemSetStatistics(
        items=figures["items"],
        label_counts={label: figures[f"gold_{label}"] for label in votes},
        unanimous=figures["unanimous"],
        with_majority=figures["with_majority"],
        gold_equals_majority=figures["gold_equals_majority"],
        adjudicated=figures["adjudicated"],
        pending=adjudication_queue(dataset, split).count(),
    )
