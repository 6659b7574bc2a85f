"""Reads for the writing pages: a worker's own claims, a family's worked examples and FAQ."""

import uuid

from django.db.models import Prefetch
from django.http import Http404
from django.shortcuts import get_object_or_404

from annotation_site.compiled_queries import CompiledQuery, as_uuid
from corpus.models import THREE_WAY, PromptExample, PromptFamily, Worker

from .models import WritingClaim

# Read on every writing page and submit: compiled once (annotation_site.compiled_queries).
WORKER_CLAIM = CompiledQuery(
    lambda _, values: (
        WritingClaim.objects.select_related("premise__genre__family", "premise__dataset", "study_session__study")
        .filter(token=values["token"], worker_id=values["worker"])
        .order_by()
    ),
    prepare=True,
)


def claim_for_worker(worker: Worker, token: uuid.UUID | str) -> WritingClaim:
    """A worker's own claim by token; anyone else's token is a 404, never a peek."""
    token_id = as_uuid(token)
    claims = [] if token_id is None else WORKER_CLAIM.objects(None, token=token_id, worker=worker.pk)
    if not claims:
        raise Http404("No such task.")
    claim: WritingClaim = claims[0]
    return claim


def family_examples(family: PromptFamily) -> list[PromptExample]:
    """The family's worked examples in label order (entailment, neutral, contradiction)."""
    examples = {example.label: example for example in family.examples.all()}
    return [examples[label] for label in THREE_WAY if label in examples]


def family_with_faq(slug: str) -> PromptFamily:
    return get_object_or_404(
        PromptFamily.objects.prefetch_related("faq_entries", Prefetch("examples", PromptExample.objects.all())),
        slug=slug,
    )
