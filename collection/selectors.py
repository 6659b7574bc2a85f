"""Reads for the writing pages: a worker's own claims, a family's worked examples and FAQ."""

import uuid

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404

from corpus.models import THREE_WAY, Dataset, Premise, PremiseStatus, PromptExample, PromptFamily, Worker
from crowd.claiming import claim_key
from crowd.models import Study
from crowd.selectors import pool_limits

from .models import WritingClaim


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
