"""Reads for the writing pages: a worker's own claims, a family's worked examples and FAQ."""

import hashlib
import uuid

from django.core.cache import cache
from django.db.models import Prefetch, QuerySet, Sum
from django.http import Http404
from django.shortcuts import get_object_or_404

from corpus.models import THREE_WAY, Dataset, Premise, PremiseStatus, PromptExample, PromptFamily, Worker
from crowd.claiming import claim_key
from crowd.models import Study
from crowd.selectors import pool_limits

from .models import StudyServed, WritingClaim


def claim_for_worker(worker: Worker, token: uuid.UUID | str) -> WritingClaim:
    """A worker's own claim by token; anyone else's token is a 404, never a peek."""
    token_id = claim_key(token)
    claim = (
        None
        if token_id is None
        else WritingClaim.objects.select_related("premise__genre__family", "premise__dataset", "study_session__study")
        .filter(token=token_id, worker=worker)
        .first()
    )
    if claim is None:
        raise Http404("No such task.")
    return claim


def family_guide(family: PromptFamily) -> dict[str, object]:
    """What the family's pages show of it: its instructions, a paragraph each, and its worked
    examples in label order (entailment, neutral, contradiction)."""
    examples = {example.label: example for example in family.examples.all()}
    return {
        "family": family,
        "instructions": [p.strip() for p in family.instructions.split("\n\n") if p.strip()],
        "examples": [examples[label] for label in THREE_WAY if label in examples],
    }


def family_with_faq(slug: str) -> PromptFamily:
    return get_object_or_404(
        PromptFamily.objects.prefetch_related("faq_entries", Prefetch("examples", PromptExample.objects.all())),
        slug=slug,
    )


def pool_premises(dataset: Dataset, study: Study | None = None) -> QuerySet[Premise]:
    """The available premises a writing study (or, without one, its dataset) may serve, splits aside."""
    premises = Premise.objects.filter(dataset=dataset, status=PremiseStatus.AVAILABLE)
    if study is not None:
        genres, sources = pool_limits(study)
        if genres:
            premises = premises.filter(genre_id__in=genres)
        if sources:
            premises = premises.filter(source__in=sources)
    return premises


def premises_without_split(dataset: Dataset, study: Study | None = None) -> int:
    """Available premises of the pool that have no split: a writing claim serves none of them."""
    unassigned: int = pool_premises(dataset, study).filter(split="").count()
    return unassigned


# A pool's genres and files change only with an import: a balanced claim reads them from here.
POOL_GROUPS_SECONDS = 60


def pool_genres(dataset_id: int, sources: list[str]) -> list[int]:
    """The genres of a dataset's premises with a split (within these files, if any), by pk; cached
    a minute, as a balanced writing claim asks on each claim."""
    key = f"pool-genres:{dataset_id}:{hashlib.sha256(repr(sorted(sources)).encode()).hexdigest()[:16]}"
    found = cache.get(key)
    if found is None:
        premises = Premise.objects.filter(dataset_id=dataset_id).exclude(split="")
        if sources:
            premises = premises.filter(source__in=sources)
        found = sorted(set(premises.order_by().values_list("genre_id", flat=True).distinct()))
        cache.set(key, found, POOL_GROUPS_SECONDS)
    return list(found)


def pool_sources(dataset_id: int, genres: list[int]) -> list[str]:
    """The import files of a dataset's premises with a split (within these genres), cached as above."""
    key = f"pool-sources:{dataset_id}:{','.join(map(str, sorted(genres)))}"
    found = cache.get(key)
    if found is None:
        premises = Premise.objects.filter(dataset_id=dataset_id).exclude(split="").exclude(source="")
        if genres:
            premises = premises.filter(genre_id__in=genres)
        found = sorted(set(premises.order_by().values_list("source", flat=True).distinct()))
        cache.set(key, found, POOL_GROUPS_SECONDS)
    return list(found)


def study_served(study_id: int) -> dict[tuple[int, str], int]:
    """The writing claims made in a study so far per (genre pk, import file), in one statement."""
    rows = (
        StudyServed.objects.filter(study_id=study_id)
        .values_list("genre_id", "source")
        .annotate(n=Sum("claims"))
        .order_by()
    )
    return {(genre, source): n for genre, source, n in rows}
