"""Recasting into the database: a template (importers.recasting: a shipped one, or any template file)
turns source rows into pairs with provenance. A dry run shows the first pairs and writes nothing;
saving writes every pair, its premise, label and provenance in ONE transaction (all or nothing).

Used by `manage.py recast` (with --dry-run) and the dashboard's Recast page.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from django.db import transaction
from django.db.models import IntegerField
from django.db.models.functions import Cast

from corpus.models import Dataset, Genre, Pair

from . import dnc, recasting
from .dnc_import import SCHEMES, DncImportError, DncImportReport, store_dnc_pairs

PREVIEW_PAIRS = 10


class RecastRefused(Exception):
    """A recast that cannot run (bad template, rows that do not fit it); nothing was saved."""


@dataclass
class RecastPreview:
    template: str
    pairs: list[dnc.DncPair]  # the first DncPairs, with provenance
    rows_read: int


def load(template: recasting.RecastTemplate | str | Path) -> recasting.RecastTemplate:
    try:
        return template if isinstance(template, recasting.RecastTemplate) else recasting.load_template(template)
    except recasting.TemplateError as error:
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
    template: recasting.RecastTemplate | str | Path,
    rows: Iterable[dict[str, str]],
    n: int = PREVIEW_PAIRS,
    split: str = "dev",
    seed: int = 0,
    dataset: str | None = None,
) -> RecastPreview:
    """The first n pairs the recast would make (reading only the rows it needs); nothing is written."""
    template = load(template)
    counted = _Counting(rows)
    first = next_pair_id(dataset) if dataset else 1
    try:
        pairs = list(islice(recasting.recast(template, counted, split=split, seed=seed, first_pair_id=first), n))
    except (recasting.RecastError, ValueError) as error:
        raise RecastRefused(str(error)) from None
    return RecastPreview(template=template.name, pairs=pairs, rows_read=counted.n)


def recast_into(
    template: recasting.RecastTemplate | str | Path,
    rows: Iterable[dict[str, str]],
    dataset: str,
    split: str,
    seed: int = 0,
    source: str = "",
    genre: Genre | None = None,
) -> DncImportReport:
    """Recast every row into `dataset` (created if missing) in one transaction; returns the DncImportReport."""
    template = load(template)
    first = next_pair_id(dataset)
    try:
        pairs = list(recasting.recast(template, rows, split=split, seed=seed, first_pair_id=first))
    except (recasting.RecastError, ValueError) as error:
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
            return store_dnc_pairs(pairs, dataset, scheme, split, source or f"template {template.name}", genre=genre)
    except DncImportError as error:
        raise RecastRefused(f"{error}; nothing was saved") from None


class _Counting:
    """Rows, counting how many were read (a dry run reads only what it shows)."""

    def __init__(self, rows: Iterable[dict[str, str]]) -> None:
        self.rows, self.n = iter(rows), 0

    def __iter__(self) -> Iterator[dict[str, str]]:
        for row in self.rows:
            self.n += 1
            yield row
