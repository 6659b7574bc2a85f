"""Reads for the worker pages: a worker's own claims, their counts, a family's FAQ."""
from django.db.models import Prefetch
from django.shortcuts import get_object_or_404

from .models import PromptExample, PromptFamily, WritingClaim, THREE_WAY


def claim_for_worker(worker, token):
    """A worker's own claim by token; anyone else's token is a 404, never a peek."""
    return get_object_or_404(
        WritingClaim.objects.select_related("premise__genre__family", "premise__dataset", "study_session__study"),
        token=token,
        worker=worker,
    )


def family_examples(family):
    """The family's worked examples in label order (entailment, neutral, contradiction)."""
    examples = {example.label: example for example in family.examples.all()}
    return [examples[label] for label in THREE_WAY if label in examples]


def family_with_faq(slug):
    return get_object_or_404(
        PromptFamily.objects.prefetch_related("faq_entries", Prefetch("examples", PromptExample.objects.all())),
        slug=slug,
    )


def worker_task_counts(worker):
    """What a worker has done so far, for their home page."""
    if worker is None:
        return {"pairs_written": 0, "premises_written": 0, "validation_labels": 0}
    return {
        "pairs_written": worker.pairs.count(),
        "premises_written": worker.writing_claims.filter(status="submitted").count(),
        "validation_labels": worker.labels.filter(position__gte=2).count(),
    }
