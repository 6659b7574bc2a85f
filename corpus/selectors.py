"""Reads of the core that several apps share: which dataset a slug names, the pairs and premises in scope."""

from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Case, Count, Q, QuerySet, Value, When

from .labels import CONTRADICTION, ENTAILMENT, GOLD_MAJORITY, NEUTRAL
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

TWO_TWO_ONE = "2-2-1 split"
ENTAILMENT_CONTRADICTION_3_2 = "3-2 split between entailment and contradiction"
JUDGMENTS_PER_ITEM = 5


def _judged(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    return pairs.filter(label_count=JUDGMENTS_PER_ITEM)


def _adjudication_case() -> tuple[Q, Q]:
    """Q of the items MPE's researchers decided by hand: no 3-of-5 majority (2-2-1), or a 3-2 split
    between entailment and contradiction (the crowd torn between opposite answers)."""
    two_two_one = Q(entailment_votes__lt=3, neutral_votes__lt=3, contradiction_votes__lt=3)
    torn = Q(entailment_votes=3, contradiction_votes=2) | Q(entailment_votes=2, contradiction_votes=3)
    return two_two_one, torn


def adjudication_queue(
    dataset: Dataset | str | None = None, split: str | None = None, pending_only: bool = True
) -> QuerySet[Pair]:
    """Judged items in an adjudication case, each annotated with `adjudication_reason`; oldest first.

    `pending_only` leaves out the items a researcher has already decided (a gold label taken from
    an imported file does not count as a researcher's decision: it stays in the queue to be checked).
    """
    two_two_one, torn = _adjudication_case()
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


@dataclass(frozen=True)
class ItemSetStatistics:
    items: int
    label_counts: dict[str, int]  # gold label -> items (a label with none counts 0)
    unanimous: int  # all five judgments agree
    with_majority: int  # at least three of five agree
    gold_equals_majority: int  # ... and the gold label is that majority
    adjudicated: int  # gold decided by a researcher or taken from the file against the majority
    pending: int  # in the adjudication queue, not yet decided by a researcher

    @property
    def unanimous_share(self) -> float:
        return self.unanimous / self.items if self.items else 0.0

    @property
    def gold_equals_majority_share(self) -> float:
        """Over the items that have a majority (as ../shared/data/README.md states MPE's figure)."""
        return self.gold_equals_majority / self.with_majority if self.with_majority else 0.0

    @property
    def label_distribution(self) -> dict[str, float]:
        return {label: count / self.items for label, count in self.label_counts.items()} if self.items else {}


def mpe_statistics(dataset: Dataset | str | None = None, split: str | None = None) -> ItemSetStatistics:
    """Label distribution, unanimous share and share of gold equal to the judgments' majority, for
    the judged (five-judgment) items of a dataset and split; one aggregate query and one count."""
    pairs = _judged(pairs_in(dataset, split))
    votes = {ENTAILMENT: "entailment_votes", NEUTRAL: "neutral_votes", CONTRADICTION: "contradiction_votes"}
    majority_is_gold = Q()
    for label, field_name in votes.items():
        majority_is_gold |= Q(**{f"{field_name}__gte": GOLD_MAJORITY, "gold_label": label})
    figures = pairs.aggregate(
        items=Count("pk"),
        unanimous=Count("pk", filter=Q(entailment_votes=5) | Q(neutral_votes=5) | Q(contradiction_votes=5)),
        with_majority=Count(
            "pk",
            filter=Q(entailment_votes__gte=GOLD_MAJORITY)
            | Q(neutral_votes__gte=GOLD_MAJORITY)
            | Q(contradiction_votes__gte=GOLD_MAJORITY),
        ),
        gold_equals_majority=Count("pk", filter=majority_is_gold),
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
