"""Reads of the core that several apps share: which dataset a slug names, the pairs and premises in
scope, and which labels count (`labels_that_count`, `in_gold`: every reader of labels asks here)."""

from typing import Any, TypedDict, TypeVar

from django.core.cache import cache
from django.db.models import Case, Count, Func, IntegerField, Model, OuterRef, Q, QuerySet, Subquery, Value, When
from django_stubs_ext import WithAnnotations

from .gold import (
    ENTAILMENT_CONTRADICTION_3_2,
    TWO_TWO_ONE,
    ItemSetStatistics,
    adjudication_case,
    gold_expression,
    majority_expression,
)
from .labels import CONTRADICTION, ENTAILMENT, LABELS_PER_PAIR, NEUTRAL, THREE_WAY_SCHEME
from .models import Adjudication, AdjudicationSource, Dataset, Genre, Pair, Premise, ValidationLabel

M = TypeVar("M", bound=Model)


def resolve_dataset(dataset: Dataset | str | None) -> Dataset | None:
    """A Dataset from a Dataset, its slug or None (None stays None: every dataset)."""
    if dataset is None or isinstance(dataset, Dataset):
        return dataset
    return Dataset.objects.get(slug=dataset)


def in_scope(
    rows: QuerySet[M],
    dataset: Dataset | str | None,
    split: str | None = None,
    *,
    on: str = "",
    scheme: str | None = None,
) -> QuerySet[M]:
    """Rows of a dataset (a Dataset or slug; None: all, or all of label scheme `scheme`) and split
    (None: all), unordered; `on` prefixes the split ("premise__": a pair's is its premise's)."""
    resolved = resolve_dataset(dataset)
    if resolved is not None:
        rows = rows.filter(dataset=resolved)
    elif scheme is not None:
        rows = rows.filter(dataset__label_scheme=scheme)
    return rows.filter(**{f"{on}split": split}).order_by() if split else rows.order_by()


def pairs_in(
    dataset: Dataset | str | None = None, split: str | None = None, *, scheme: str | None = None
) -> QuerySet[Pair]:
    return in_scope(Pair.objects.all(), dataset, split, on="premise__", scheme=scheme)


def labels_scheme_of_scope(dataset: Dataset | str | None) -> str | None:
    """The label scheme that figures of labels over every dataset keep to: three-way. A two-way
    dataset stores "not-entailed" as neutral, so summed with three-way ones it counted as neutral
    in gold counts and κ; its figures are on its own page. None for one dataset (its own scheme)."""
    return THREE_WAY_SCHEME if resolve_dataset(dataset) is None else None


def datasets_outside_scheme(scheme: str) -> list[str]:
    """Slugs of the datasets with pairs whose labels are in another scheme (left out of "all datasets")."""
    return list(
        Dataset.objects.exclude(label_scheme=scheme)
        .filter(pairs__isnull=False)
        .distinct()
        .order_by("slug")
        .values_list("slug", flat=True)
    )


def premises_in(dataset: Dataset | str | None = None, split: str | None = None) -> QuerySet[Premise]:
    return in_scope(Premise.objects.all(), dataset, split)


# --- which labels count ---------------------------------------------------------------------------
# The one statement of the rule. Every label of a pair counts (the author's at AUTHOR_POSITION and
# the validators' after it), except those of excluded workers (worker quality, SNLI §2.2) and those
# written in a study session its market has not vouched for (`awaiting_market_session`, issue 50.1:
# until it vouches, or for good once it refuses); an imported label (no worker) always counts. Of the labels that count, a pair's counters, gold label
# and exported labels take the earliest five by position (`in_gold`): a pair that lost a label to
# an exclusion took a replacement after its last (6, 7, ...), and when the worker is included again
# their label counts again and the latest replacement drops out.


def answers_of_counted_workers(prefix: str = "") -> Q:
    """Answers (labels, judgments) by no worker (imported) or by one not excluded: the worker half of
    `labels_that_count`, for answer tables that keep no market wait of their own."""
    return Q(**{f"{prefix}worker__isnull": True}) | Q(**{f"{prefix}worker__is_excluded": False})


def labels_that_count(prefix: str = "") -> Q:
    """The labels that count, as a filter on ValidationLabel (`prefix` "labels__" from a Pair)."""
    return answers_of_counted_workers(prefix) & Q(**{f"{prefix}awaiting_market_session__isnull": True})


def replacement_labels_in_gold() -> QuerySet[Any, Any]:
    """Pks of labels beyond position 5 that count towards gold: counting, with fewer than five
    counting labels before them on their pair. Such labels exist only where an exclusion was healed,
    so this subquery touches few rows."""
    earlier = (
        ValidationLabel.objects.filter(labels_that_count(), pair=OuterRef("pair"), position__lt=OuterRef("position"))
        .order_by()
        .annotate(n=Func("pk", function="COUNT"))
        .values("n")
    )
    return (
        ValidationLabel.objects.filter(labels_that_count(), position__gt=LABELS_PER_PAIR)
        .annotate(earlier=Subquery(earlier, output_field=IntegerField()))
        .filter(earlier__lt=LABELS_PER_PAIR)
        .values("pk")
    )


def in_gold(prefix: str = "") -> Q:
    """The labels a pair's counters, gold label and exported labels count: the earliest five labels
    that count, by position. One that counts in positions 1-5 always is (at most four precede it)."""
    return labels_that_count(prefix) & (
        Q(**{f"{prefix}position__lte": LABELS_PER_PAIR}) | Q(**{f"{prefix}pk__in": replacement_labels_in_gold()})
    )


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


class AdjudicationReason(TypedDict):
    """What `adjudication_queue` annotates each pair with."""

    adjudication_reason: str


def adjudication_queue(
    dataset: Dataset | str | None = None, split: str | None = None, *, pending_only: bool = True
) -> "QuerySet[WithAnnotations[Pair, AdjudicationReason]]":
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
