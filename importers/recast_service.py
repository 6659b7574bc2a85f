"""Recasting into the database: a template (importers.recast_templates: a shipped one, or any template file)
turns source rows into pairs with provenance. A dry run shows the first pairs and writes nothing;
saving writes every pair, its premise, label and provenance in ONE transaction (all or nothing).

Used by `manage.py recast` (with --dry-run) and the dashboard's Recast page.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import IntegerField
from django.db.models.functions import Cast

from audit import services as audit
from corpus.models import Dataset, Genre, Pair
from corpus.selectors import DatasetNameRefused, NamedDataset, dataset_named_by

from . import dnc, recast_templates, recasting
from .dnc_import import SCHEMES, DncImportError, DncImportReport, store_dnc_pairs

PREVIEW_PAIRS = 10


class RecastRefused(Exception):
    """A recast that cannot run (bad template, rows that do not fit it); nothing was saved."""


@dataclass
class RecastPreview:
    template: str
    pairs: list[dnc.DncPair]  # the first DncPairs, with provenance
    rows_read: int


def load(template: recast_templates.RecastTemplate | str | Path) -> recast_templates.RecastTemplate:
    try:
        return (
            template
            if isinstance(template, recast_templates.RecastTemplate)
            else recast_templates.load_template(template)
        )
    except recast_templates.TemplateError as error:
        raise RecastRefused(str(error)) from None


def next_pair_id(dataset_slug: str) -> int:
    """One above the highest numeric pairID of the dataset (1 for a new one), so recasts never collide."""
    highest = (
        Pair.objects.filter(dataset__slug=dataset_slug, pair_id__regex=r"^[0-9]{1,15}$")
        .annotate(number=Cast("pair_id", IntegerField()))
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    return (highest or 0) + 1


def dry_run(
    template: recast_templates.RecastTemplate | str | Path,
    rows: Iterable[dict[str, str]],
    n: int = PREVIEW_PAIRS,
    split: str = "dev",
    seed: int = 0,
    dataset: str | None = None,
    user: Any = None,
) -> RecastPreview:
    """The first n pairs the recast would make (reading only the rows it needs); nothing is written.
    With `user`, another team's `dataset` is refused (`home_team`)."""
    template = load(template)
    if dataset:
        dataset = named(dataset, user).slug
    counted = _Counting(rows)
    first = next_pair_id(dataset) if dataset else 1
    try:
        pairs = list(islice(recasting.recast(template, counted, split=split, seed=seed, first_pair_id=first), n))
    except (recast_templates.RecastError, ValueError) as error:
        raise RecastRefused(str(error)) from None
    return RecastPreview(template=template.name, pairs=pairs, rows_read=counted.n)


def recast_into(
    template: recast_templates.RecastTemplate | str | Path,
    rows: Iterable[dict[str, str]],
    dataset: str,
    split: str,
    seed: int = 0,
    source: str = "",
    genre: Genre | None = None,
    user: Any = None,
) -> DncImportReport:
    """Recast every row into `dataset` (created if missing: with `user`, in their team) in one
    transaction; returns the DncImportReport. With `user`, another team's `dataset` is refused."""
    template = load(template)
    name, chosen = dataset, named(dataset, user)
    dataset, home = chosen.slug, chosen.team_id
    first = next_pair_id(dataset)
    try:
        pairs = list(recasting.recast(template, rows, split=split, seed=seed, first_pair_id=first))
    except (recast_templates.RecastError, ValueError) as error:
        raise RecastRefused(f"{error}; nothing was saved") from None
    if not pairs:
        raise RecastRefused("the source has no rows; nothing was saved")
    schemes = {pair.label_scheme for pair in pairs}
    if len(schemes) != 1:
        raise RecastRefused(f"the template gives labels of several schemes ({', '.join(sorted(schemes))})")
    scheme = SCHEMES[schemes.pop()]
    existing = Dataset.objects.filter(slug=dataset).values_list("label_scheme", flat=True).first()
    if existing and existing != scheme and Pair.objects.filter(dataset__slug=dataset).exists():
        raise RecastRefused(
            f"dataset {dataset} holds {existing} labels and this template gives {scheme}; nothing was saved"
        )
    try:
        with transaction.atomic():
            target = None
            if home is not None:
                target, _ = Dataset.objects.get_or_create(
                    slug=dataset, defaults={"name": name, "is_imported": True, "team_id": home, "label_scheme": scheme}
                )
            report = store_dnc_pairs(pairs, dataset, scheme, split, source or f"template {template.name}", genre=genre)
            if target is None:  # store_dnc_pairs made it (a recast with no home team)
                target = Dataset.objects.get(slug=dataset)
            # In the same transaction: the pairs and the record of who recast them land together.
            audit.record(
                "import.recast",
                actor=user,
                subject=target,
                team_id=target.team_id,
                after={"template": template.name, "split": split, "seed": seed, "pairs": report.pairs_created},
                datasets=[target.slug],
            )
            return report
    except DncImportError as error:
        raise RecastRefused(f"{error}; nothing was saved") from None


def named(dataset: str, user: Any) -> NamedDataset:
    """The dataset a recast by `user` names (corpus.selectors.dataset_named): one of their teams'
    datasets, or a new one of their team; another team's dataset of that name is neither reached
    nor named. Without a user (the command) the name is the slug."""
    if user is None:
        return NamedDataset(slug=dataset, exists=Dataset.objects.filter(slug=dataset).exists(), team_id=None)
    try:
        return dataset_named_by(dataset, user)
    except DatasetNameRefused as refused:
        raise RecastRefused(str(refused)) from None


class _Counting:
    """Rows, counting how many were read (a dry run reads only what it shows)."""

    def __init__(self, rows: Iterable[dict[str, str]]) -> None:
        self.rows, self.n = iter(rows), 0

    def __iter__(self) -> Iterator[dict[str, str]]:
        for row in self.rows:
            self.n += 1
            yield row
