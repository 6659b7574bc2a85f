"""Reads of the core that several apps share: which dataset a name means, the pairs and premises of
a scope (`corpus.scope.Scope`), and which labels count (`labels_that_count`, `in_gold`: every
reader of labels asks here)."""

from dataclasses import dataclass
from typing import Any, TypedDict

from django.core.cache import cache
from django.db.models import Case, Exists, Func, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When
from django_stubs_ext import WithAnnotations

from teams import access
from teams.models import DEFAULT_TEAM_SLUG, Team

from .gold import ENTAILMENT_CONTRADICTION_3_2, TWO_TWO_ONE, adjudication_case
from .labels import LABELS_PER_PAIR, THREE_WAY_SCHEME
from .models import (
    Adjudication,
    AdjudicationSource,
    Dataset,
    Genre,
    Pair,
    Premise,
    ValidationLabel,
    Worker,
    WorkerExclusion,
)
from .scope import Scope

# Dataset names are per team: a new dataset of a team other than the default one has the slug
# `<team slug>--<name>`, so a name another team uses is neither taken from anyone nor said to
# exist (which would leak it).
TEAM_SEPARATOR = "--"


class DatasetNameRefused(ValueError):
    """A name that cannot name a new dataset (it has the team separator)."""


@dataclass(frozen=True)
class NamedDataset:
    slug: str  # what the name stands for in the user's namespace
    exists: bool
    team_id: int | None  # the team of a new dataset of that slug (None: it exists, or no team was given)


def dataset_named(name: str, *, teams: "frozenset[int] | set[int] | None", home: int | None) -> NamedDataset:
    """What a dataset name a researcher typed means: one of their teams' datasets of that slug
    (`teams`; None: every team), or a new dataset of their team `home` (the default team when None),
    whose slug carries that team's prefix. Another team's dataset of that slug is as if it did not exist."""
    mine = Dataset.objects.filter(slug=name)
    if teams is not None:
        mine = mine.filter(team_id__in=teams)
    if mine.exists():
        return NamedDataset(slug=name, exists=True, team_id=None)
    if TEAM_SEPARATOR in name:
        raise DatasetNameRefused(f"A new dataset's name may not contain '{TEAM_SEPARATOR}'.")
    team = Team.objects.filter(pk=home).first() if home is not None else None
    for slug in (_slug_in_team(name, team), f"{team.slug if team else DEFAULT_TEAM_SLUG}{TEAM_SEPARATOR}{name}"):
        found = Dataset.objects.filter(slug=slug).values_list("team_id", flat=True).first()
        if found is None:
            return NamedDataset(slug=slug, exists=False, team_id=home)
        if found == home or (home is None and teams is None):
            return NamedDataset(slug=slug, exists=True, team_id=None)
    # A legacy dataset of another team holds both forms (made before names were per team).
    raise DatasetNameRefused("Choose another name for the new dataset.")


def dataset_named_by(name: str, user: Any) -> NamedDataset:
    """The dataset a researcher's upload or recast names, in the teams where they may import (every
    team for no user: a command); DatasetNameRefused when they may not."""
    teams = access.team_ids(user, access.RESEARCH) if user is not None else None
    home = access.home_team_id(user) if user is not None else None
    named = dataset_named(name, teams=teams, home=home)
    if user is not None and not named.exists and home is None:
        raise DatasetNameRefused("You are in no team where you may import data.")
    return named


def _slug_in_team(name: str, team: "Team | None") -> str:
    return name if team is None or team.slug == DEFAULT_TEAM_SLUG else f"{team.slug}{TEAM_SEPARATOR}{name}"


def pairs_in(scope: Scope, *, scheme: str | None = None) -> QuerySet[Pair]:
    return scope.rows(Pair.objects.all(), on="premise__", scheme=scheme)


def labels_scheme_of_scope(scope: Scope) -> str | None:
    """The label scheme that figures of labels over several datasets keep to: three-way (a two-way
    dataset stores "not-entailed" as neutral). None for one dataset (its own scheme)."""
    return THREE_WAY_SCHEME if scope.one is None else None


def datasets_outside_scheme(scheme: str, among: Scope) -> list[str]:
    """Slugs of the datasets of `among` with pairs whose labels are in another scheme."""
    rows = among.datasets() if among.one is None else Dataset.objects.all()
    # One probe of a pair per dataset (`unique_pair_id` leads with the dataset), not a join of every pair.
    with_pairs = Exists(Pair.objects.filter(dataset=OuterRef("pk")))
    return list(rows.exclude(label_scheme=scheme).filter(with_pairs).order_by("slug").values_list("slug", flat=True))


def premises_in(scope: Scope) -> QuerySet[Premise]:
    return scope.rows(Premise.objects.all())


# --- which labels count ---------------------------------------------------------------------------
# The one statement of the rule. Every label of a pair counts, except those of workers excluded in
# the team of the pair's dataset (`ValidationLabel.excluded`) and those written in a study session
# its market has not vouched for (`awaiting_market_session`). Of the labels that count, a pair's
# counters, gold label and exported labels take the earliest five by position (`in_gold`): when an
# excluded worker is included again, the latest replacement label drops out.


def answers_of_counted_workers(prefix: str = "", *, dataset: str = "pair__dataset") -> Q:
    """Answers by no worker (imported) or by one not excluded in the team of the answer's dataset
    (`dataset`: the path to it): the rule for answer tables that keep no mark of their own."""
    excluded = WorkerExclusion.objects.filter(
        worker_id=OuterRef(f"{prefix}worker_id"), team_id=OuterRef(f"{prefix}{dataset}__team_id")
    )
    return Q(**{f"{prefix}worker__isnull": True}) | Q(~Exists(excluded))


def labels_that_count(prefix: str = "") -> Q:
    """The labels that count, as a filter on ValidationLabel (`prefix` "labels__" from a Pair): two
    columns of the label itself, so a read of every label joins no worker row per label."""
    return Q(**{f"{prefix}excluded": False}) & Q(**{f"{prefix}awaiting_market_session__isnull": True})


def is_excluded_in(worker: Worker, team_id: int | None) -> bool:
    """Whether the team excluded this worker (their tasks there end; they take no new ones)."""
    return team_id is not None and WorkerExclusion.objects.filter(worker=worker, team_id=team_id).exists()


def datasets_excluding(worker: Worker) -> QuerySet[Dataset, Any]:
    """The datasets of the teams that excluded this worker, as a subquery."""
    return Dataset.objects.filter(team__worker_exclusions__worker=worker).values("pk")


def excluded_workers(scope: Scope) -> set[int]:
    """The workers excluded in the teams of a scope (any team, for every dataset)."""
    exclusions = WorkerExclusion.objects.all()
    if scope.dataset is not None:
        exclusions = excluded_in([scope.dataset.team_id])
    elif scope.teams is not None:
        exclusions = exclusions.filter(team_id__in=scope.teams)
    return set(exclusions.values_list("worker_id", flat=True))


def excluded_in(team_ids: Any) -> QuerySet[WorkerExclusion]:
    """The exclusions of these teams (a list or a subquery of team ids)."""
    return WorkerExclusion.objects.filter(team_id__in=team_ids)


def replacement_labels_in_gold() -> QuerySet[Any, Any]:
    """Pks of labels beyond position 5 that count towards gold (fewer than five counting labels
    before them on their pair): few, only where an exclusion was healed."""
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
    """{genre slug: display name}, kept a minute in the cache (genres are renamed rarely)."""
    names: dict[str, str] | None = cache.get(GENRE_NAMES_CACHE_KEY)
    if names is None:
        names = dict(Genre.objects.values_list("slug", "name"))
        cache.set(GENRE_NAMES_CACHE_KEY, names, 60)
    return names


# --- multi-premise items (MPE, Lai et al. 2017 §4.2) ----------------------------------------------

JUDGMENTS_PER_ITEM = 5


def _judged(pairs: QuerySet[Pair]) -> QuerySet[Pair]:
    return pairs.filter(label_count=JUDGMENTS_PER_ITEM)


def awaiting_decision() -> Q:
    """The pairs whose adjudication is pending, as a filter on Pair: no researcher's decision stands
    on the pair (none was made, or the latest was a withdrawal). A gold label taken from an imported
    file is not a researcher's decision: the pair stays in to be checked."""
    decided = Adjudication.objects.filter(source=AdjudicationSource.RESEARCHER).values("pair_id")
    return Q(adjudicated_label="") | ~Q(pk__in=decided)


class AdjudicationReason(TypedDict):
    """What `adjudication_queue` annotates each pair with."""

    adjudication_reason: str


def adjudication_queue(
    scope: Scope, *, pending_only: bool = True
) -> "QuerySet[WithAnnotations[Pair, AdjudicationReason]]":
    """Judged items in an adjudication case, each annotated with `adjudication_reason`; oldest first."""
    two_two_one, torn = adjudication_case()
    pairs = _judged(pairs_in(scope)).filter(two_two_one | torn)
    if pending_only:
        pairs = pairs.filter(awaiting_decision())
    return (
        pairs.annotate(
            adjudication_reason=Case(
                When(two_two_one, then=Value(TWO_TWO_ONE)), default=Value(ENTAILMENT_CONTRADICTION_3_2)
            )
        )
        .select_related("premise")
        .order_by("pk")
    )
