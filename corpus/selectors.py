"""Reads of the core that several apps share: which dataset a slug names, the pairs and premises in
scope, and which labels count (`labels_that_count`, `in_gold`: every reader of labels asks here)."""

from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar

from django.core.cache import cache
from django.db.models import Case, Exists, Func, IntegerField, Model, OuterRef, Q, QuerySet, Subquery, Value, When
from django_stubs_ext import WithAnnotations

from teams import access
from teams.models import DEFAULT_TEAM_SLUG, Team

from .gold import (
    ENTAILMENT_CONTRADICTION_3_2,
    TWO_TWO_ONE,
    adjudication_case,
)
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

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class TeamDatasets:
    """Every dataset of some teams (a user's: `teams.access.figure_teams`): what a page's figures add
    up when no one dataset is chosen. Every reader of a scope treats it as "every dataset" (the
    three-way ones for labels), narrowed to these teams' datasets."""

    teams: frozenset[int]

    @property
    def key(self) -> str:
        """A name of the group for cache keys: the same teams, the same figures."""
        return "teams-" + "-".join(str(team) for team in sorted(self.teams))

    def datasets(self) -> QuerySet[Dataset]:
        return Dataset.objects.filter(team_id__in=self.teams)


# What figures are of: one dataset (or its slug), a team's datasets, or None (every dataset).
DatasetScope = Dataset | TeamDatasets | None


def figures_of(dataset: Dataset | None, teams: frozenset[int] | None) -> DatasetScope:
    """What a user's figures add up: the dataset chosen (one of their teams', checked by the
    caller), else every dataset of their teams (`teams.access.figure_teams`; None: every dataset)."""
    if dataset is not None:
        return dataset
    return None if teams is None else TeamDatasets(teams)


def dataset_sql(dataset: DatasetScope, column: str) -> tuple[str, list[Any]] | None:
    """`in_datasets` for raw SQL: (condition on `column`, a dataset id column, and its parameters),
    None for every dataset."""
    if isinstance(dataset, TeamDatasets):
        table = Dataset._meta.db_table
        return f"{column} IN (SELECT id FROM {table} WHERE team_id = ANY(%s))", [sorted(dataset.teams)]
    if dataset is not None:
        return f"{column} = %s", [dataset.pk]
    return None


# --- the names researchers give datasets ------------------------------------------------------
# Dataset names are per team: a new dataset of a team other than the default one has the slug
# `<team slug>--<name>` (the default team's, a fresh install's and the demo's, the bare name), so a
# name another team uses is neither taken from anyone nor said to exist (which would leak it).
TEAM_SEPARATOR = "--"


class DatasetNameRefused(ValueError):
    """A name that cannot name a new dataset (it has the team separator)."""


@dataclass(frozen=True)
class NamedDataset:
    slug: str  # what the name stands for in the user's namespace
    exists: bool
    team_id: int | None  # the team of a new dataset of that slug (None: it exists, or no team was given)


def dataset_named(name: str, *, teams: "frozenset[int] | set[int] | None", home: int | None) -> NamedDataset:
    """What a dataset name a researcher typed means: one of their teams' datasets of that slug (`teams`:
    where they may add data; None: every team, a superuser or a command), or a new dataset of their
    team `home` (the default team when None), whose slug carries that team's prefix. Another
    team's dataset of the same slug is treated as if it did not exist."""
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
    """The dataset a researcher's upload or recast names (`dataset_named`), in the teams where they
    may import (every team for no user: a command); DatasetNameRefused when they may not."""
    teams = access.team_ids(user, access.RESEARCH) if user is not None else None
    home = access.home_team_id(user) if user is not None else None
    named = dataset_named(name, teams=teams, home=home)
    if user is not None and not named.exists and home is None:
        raise DatasetNameRefused("You are in no team where you may import data.")
    return named


def _slug_in_team(name: str, team: "Team | None") -> str:
    return name if team is None or team.slug == DEFAULT_TEAM_SLUG else f"{team.slug}{TEAM_SEPARATOR}{name}"


def resolve_dataset(dataset: Dataset | TeamDatasets | str | None) -> DatasetScope:
    """A Dataset from a Dataset, its slug or None (None stays None: every dataset; a group of
    datasets stays the group)."""
    if dataset is None or isinstance(dataset, Dataset | TeamDatasets):
        return dataset
    return Dataset.objects.get(slug=dataset)


def one_dataset(dataset: Dataset | TeamDatasets | str | None) -> Dataset | None:
    """The one dataset a scope names (None: several, every one or a team's)."""
    resolved = resolve_dataset(dataset)
    return resolved if isinstance(resolved, Dataset) else None


def in_datasets(rows: QuerySet[M], dataset: DatasetScope, via: str = "dataset") -> QuerySet[M]:
    """`rows` (reaching their dataset by `via`) of a scope: one dataset, a team's, or all (None)."""
    if isinstance(dataset, TeamDatasets):
        return rows.filter(**{f"{via}__team_id__in": dataset.teams})
    if dataset is not None:
        return rows.filter(**{via: dataset})
    return rows


def in_scope(
    rows: QuerySet[M],
    dataset: Dataset | TeamDatasets | str | None,
    split: str | None = None,
    *,
    on: str = "",
    scheme: str | None = None,
) -> QuerySet[M]:
    """Rows of a dataset (a Dataset or slug; None: all, or all of label scheme `scheme`) and split
    (None: all), unordered; `on` prefixes the split ("premise__": a pair's is its premise's)."""
    resolved = resolve_dataset(dataset)
    rows = in_datasets(rows, resolved)
    if not isinstance(resolved, Dataset) and scheme is not None:
        rows = rows.filter(dataset__label_scheme=scheme)
    return rows.filter(**{f"{on}split": split}).order_by() if split else rows.order_by()


def pairs_in(
    dataset: Dataset | TeamDatasets | str | None = None, split: str | None = None, *, scheme: str | None = None
) -> QuerySet[Pair]:
    return in_scope(Pair.objects.all(), dataset, split, on="premise__", scheme=scheme)


def labels_scheme_of_scope(dataset: Dataset | TeamDatasets | str | None) -> str | None:
    """The label scheme that figures of labels over every dataset keep to: three-way. A two-way
    dataset stores "not-entailed" as neutral, so summed with three-way ones it counted as neutral
    in gold counts and κ; its figures are on its own page. None for one dataset (its own scheme)."""
    return THREE_WAY_SCHEME if one_dataset(dataset) is None else None


def datasets_outside_scheme(scheme: str, among: DatasetScope = None) -> list[str]:
    """Slugs of the datasets (of `among`: a team's, or every one) with pairs whose labels are in
    another scheme (left out of "all datasets")."""
    rows = among.datasets() if isinstance(among, TeamDatasets) else Dataset.objects.all()
    # One probe of a pair per dataset (`unique_pair_id` leads with the dataset), not a join of every pair.
    with_pairs = Exists(Pair.objects.filter(dataset=OuterRef("pk")))
    return list(rows.exclude(label_scheme=scheme).filter(with_pairs).order_by("slug").values_list("slug", flat=True))


def premises_in(dataset: Dataset | TeamDatasets | str | None = None, split: str | None = None) -> QuerySet[Premise]:
    return in_scope(Premise.objects.all(), dataset, split)


# --- which labels count ---------------------------------------------------------------------------
# The one statement of the rule. Every label of a pair counts (the author's at AUTHOR_POSITION and
# the validators' after it), except those of workers excluded in the team of the pair's dataset
# (worker quality, SNLI §2.2; `ValidationLabel.excluded`, kept by `corpus.services`) and those
# written in a study session its market has not vouched for (`awaiting_market_session`:
# until it vouches, or for good once it refuses); an imported label (no worker) always counts. Of the labels that count, a pair's counters, gold label
# and exported labels take the earliest five by position (`in_gold`): a pair that lost a label to
# an exclusion took a replacement after its last (6, 7, ...), and when the worker is included again
# their label counts again and the latest replacement drops out.


def answers_of_counted_workers(prefix: str = "", *, dataset: str = "pair__dataset") -> Q:
    """Answers (judgments, per-premise labels) by no worker (imported) or by one not excluded in the
    team of the answer's dataset (`dataset`: the path from the answer to it): the worker half of the
    rule, for answer tables that keep no mark of their own (labels keep `excluded`)."""
    excluded = WorkerExclusion.objects.filter(
        worker_id=OuterRef(f"{prefix}worker_id"), team_id=OuterRef(f"{prefix}{dataset}__team_id")
    )
    return Q(**{f"{prefix}worker__isnull": True}) | Q(~Exists(excluded))


def labels_that_count(prefix: str = "") -> Q:
    """The labels that count, as a filter on ValidationLabel (`prefix` "labels__" from a Pair): two
    columns of the label itself, so a statement that reads every label of a corpus (the snapshot
    export) joins no worker row per label."""
    return Q(**{f"{prefix}excluded": False}) & Q(**{f"{prefix}awaiting_market_session__isnull": True})


def is_excluded_in(worker: Worker, team_id: int | None) -> bool:
    """Whether the team excluded this worker (their tasks there end; they take no new ones)."""
    return team_id is not None and WorkerExclusion.objects.filter(worker=worker, team_id=team_id).exists()


def datasets_excluding(worker: Worker) -> QuerySet[Dataset, Any]:
    """The datasets of the teams that excluded this worker (a subquery: `dataset__in=`): what no
    task offers them."""
    return Dataset.objects.filter(team__worker_exclusions__worker=worker).values("pk")


def excluded_workers(dataset: "DatasetScope | str") -> set[int]:
    """The workers excluded in the teams of a scope: one dataset's team, a group's teams, or any team
    (None): what a page that shows a worker's standing marks "excluded"."""
    exclusions = WorkerExclusion.objects.all()
    dataset = resolve_dataset(dataset)
    if isinstance(dataset, TeamDatasets):
        exclusions = exclusions.filter(team_id__in=dataset.teams)
    elif dataset is not None:
        exclusions = excluded_in([dataset.team_id])
    return set(exclusions.values_list("worker_id", flat=True))


def excluded_in(team_ids: Any) -> QuerySet[WorkerExclusion]:
    """The exclusions of these teams (a list or a subquery of team ids)."""
    return WorkerExclusion.objects.filter(team_id__in=team_ids)


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


def awaiting_decision() -> Q:
    """The pairs whose adjudication is pending, as a filter on Pair: the one rule of every queue
    (the MPE page's, the adjudication page's). No researcher's decision stands on the pair: none
    was made, or the latest was a withdrawal (the gold is the rule's again, `adjudicated_label`
    empty). A gold label taken from an imported file is not a researcher's decision: the pair
    stays in to be checked."""
    decided = Adjudication.objects.filter(source=AdjudicationSource.RESEARCHER).values("pair_id")
    return Q(adjudicated_label="") | ~Q(pk__in=decided)


class AdjudicationReason(TypedDict):
    """What `adjudication_queue` annotates each pair with."""

    adjudication_reason: str


def adjudication_queue(
    dataset: Dataset | TeamDatasets | str | None = None, split: str | None = None, *, pending_only: bool = True
) -> "QuerySet[WithAnnotations[Pair, AdjudicationReason]]":
    """Judged items in an adjudication case, each annotated with `adjudication_reason`; oldest first.

    `pending_only` keeps the items still awaiting a researcher's decision (`awaiting_decision`).
    """
    two_two_one, torn = adjudication_case()
    pairs = _judged(pairs_in(dataset, split)).filter(two_two_one | torn)
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
