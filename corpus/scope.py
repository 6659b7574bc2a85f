"""What figures are of: one dataset, the datasets of some teams, or every dataset, and a split.

The one way every reader of the corpus is told what to read: a page builds one per request
(`dashboard.views.common.Scope.within`), a command or API call one from the slug it was given
(`Scope.named`), and every selector narrows its rows with it (`rows`, `filter`, `sql`).
"""

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from .models import Dataset

M = TypeVar("M", bound=Model)

# The name of every dataset in keys (cache keys, the stored tables' keys).
EVERY_DATASET = "all"
TEAMS_PREFIX = "teams-"


@dataclass(frozen=True)
class Scope:
    """One dataset (`dataset`), every dataset of some teams (`teams`: a user's,
    `teams.access.figure_teams`, when no one dataset is chosen) or every dataset (neither), and a
    split (None: every split). Equal scopes have equal keys."""

    dataset: Dataset | None = None
    teams: frozenset[int] | None = None
    split: str | None = None

    def __post_init__(self) -> None:
        if self.dataset is not None and self.teams is not None:
            raise ValueError("A scope is of one dataset or of some teams' datasets, not both.")

    # --- constructors ------------------------------------------------------------------------

    @classmethod
    def everything(cls, split: str | None = None) -> "Scope":
        return cls(split=split or None)

    @classmethod
    def of_dataset(cls, dataset: Dataset | None, split: str | None = None) -> "Scope":
        """One dataset (None: every dataset)."""
        return cls(dataset=dataset, split=split or None)

    @classmethod
    def of_teams(cls, teams: Iterable[int] | None, split: str | None = None) -> "Scope":
        """Every dataset of these teams (None: of every team, so every dataset)."""
        return cls(teams=None if teams is None else frozenset(teams), split=split or None)

    @classmethod
    def figures_of(cls, dataset: Dataset | None, teams: Iterable[int] | None, split: str | None = None) -> "Scope":
        """What a user's figures add up: the dataset chosen (one of their teams', checked by the
        caller), else every dataset of their teams (None: every dataset)."""
        return cls.of_dataset(dataset, split) if dataset is not None else cls.of_teams(teams, split)

    @classmethod
    def named(cls, slug: str | None, split: str | None = None) -> "Scope":
        """The scope a command, an API call or a test names by a dataset's slug (empty: every
        dataset); Dataset.DoesNotExist for an unknown slug."""
        if not slug:
            return cls.everything(split)
        return cls.of_dataset(Dataset.objects.get(slug=slug), split)

    @classmethod
    def of_key(cls, name: str | int | None, split: str | None = None) -> "Scope | None":
        """The scope `datasets_key` named (None: its dataset is gone since)."""
        text = "" if name is None else str(name)
        if text in ("", EVERY_DATASET):
            return cls.everything(split)
        if text.startswith(TEAMS_PREFIX):
            return cls.of_teams((int(team) for team in text.removeprefix(TEAMS_PREFIX).split("-") if team), split)
        dataset = Dataset.objects.filter(pk=int(text)).first()
        return None if dataset is None else cls.of_dataset(dataset, split)

    def with_split(self, split: str | None) -> "Scope":
        return replace(self, split=split or None)

    def whole(self) -> "Scope":
        """The same datasets, every split."""
        return self.with_split(None)

    # --- what it is of -----------------------------------------------------------------------

    @property
    def one(self) -> Dataset | None:
        """The one dataset (None: several, every one or some teams')."""
        return self.dataset

    @property
    def is_everything(self) -> bool:
        return self.dataset is None and self.teams is None

    @property
    def datasets_key(self) -> str:
        """What datasets it is of, in keys: a dataset's id, a team group's ("teams-1-3"), "all"."""
        if self.dataset is not None:
            return str(self.dataset.pk)
        if self.teams is not None:
            return TEAMS_PREFIX + "-".join(str(team) for team in sorted(self.teams))
        return EVERY_DATASET

    @property
    def key(self) -> str:
        """The name of the scope in cache keys and stored tables: "all:all", "3:train", "teams-1-3:all"."""
        return f"{self.datasets_key}:{self.split or 'all'}"

    def datasets(self) -> QuerySet[Dataset]:
        if self.dataset is not None:
            return Dataset.objects.filter(pk=self.dataset.pk)
        if self.teams is not None:
            return Dataset.objects.filter(team_id__in=self.teams)
        return Dataset.objects.all()

    def dataset_ids(self) -> frozenset[int] | None:
        """The ids of the scope's datasets (None: every dataset), for rows read by their keys alone
        and kept when of the scope."""
        if self.dataset is not None:
            return frozenset([self.dataset.pk])
        if self.teams is not None:
            return frozenset(self.datasets().values_list("pk", flat=True))
        return None

    # --- narrowing rows ----------------------------------------------------------------------

    def filter(self, rows: QuerySet[M], via: str = "dataset") -> QuerySet[M]:
        """`rows` (reaching their dataset by `via`) of the scope's datasets; the split is not read."""
        if self.dataset is not None:
            return rows.filter(**{via: self.dataset})
        if self.teams is not None:
            return rows.filter(**{f"{via}__team_id__in": self.teams})
        return rows

    def rows(self, rows: QuerySet[M], *, on: str = "", scheme: str | None = None) -> QuerySet[M]:
        """Rows of the scope's datasets (of label scheme `scheme` when it is of several) and split,
        unordered; `on` prefixes the split ("premise__": a pair's is its premise's)."""
        rows = self.filter(rows)
        if self.dataset is None and scheme is not None:
            rows = rows.filter(dataset__label_scheme=scheme)
        return rows.filter(**{f"{on}split": self.split}).order_by() if self.split else rows.order_by()

    def sql(self, column: str) -> tuple[str, list[Any]] | None:
        """`filter` for raw SQL: (condition on `column`, a dataset id column, and its parameters),
        None for every dataset."""
        if self.dataset is not None:
            return f"{column} = %s", [self.dataset.pk]
        if self.teams is not None:
            table = Dataset._meta.db_table
            return f"{column} IN (SELECT id FROM {table} WHERE team_id = ANY(%s))", [sorted(self.teams)]
        return None


# Every dataset, every split: the default of the selectors that take a scope.
EVERYTHING = Scope()
