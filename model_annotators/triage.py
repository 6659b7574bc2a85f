"""Triage in the validation claim's order, off unless a study names a triage model
(`ModelUse.triage_annotator`): pairs whose model label differs from the writer's are claimed first.

`claim_preference` (registered into `validation.claim_order`) is one SQL expression over the
candidate pair, so the claim stays one statement; a study without triage answers None and its plan
is as before. A study's triage is cached: a saved or deleted ModelUse, or a new prompt version,
forgets it at once (ModelAnnotatorsConfig.ready), anything else within TRIAGE_SECONDS.
"""

from typing import Any

from django.core.cache import cache

from crowd.models import Study

from .models import ModelUse, Outcome
from .scope import CannotLabel, asked_with

TRIAGE_SECONDS = 60

# Pairs whose model label (of one annotator, under one prompt) differs from the writer's label:
# one lookup of the pair's labels (index model_label_pair) for each pair the claim walks.
DISAGREEING_SQL = (
    "EXISTS (SELECT 1 FROM model_annotators_modellabel m WHERE m.pair_id = collection_pair.id"
    " AND m.annotator_id = %s AND m.asked_with = %s AND m.outcome = %s AND m.label <> collection_pair.author_label)"
)


def _key(study_id: int) -> str:
    return f"model-annotators:triage:{study_id}"


def triage_of(study: Study) -> tuple[int, str] | None:
    """(annotator pk, asked-with key) of the study's triage model, or None when triage is off."""
    cached = cache.get(_key(study.pk))
    if cached is None:
        use = (
            ModelUse.objects.filter(study=study, triage_annotator__isnull=False)
            .select_related("triage_annotator__dataset")
            .first()
        )
        cached = []
        if use is not None and use.triage_annotator is not None:
            try:
                cached = [use.triage_annotator.pk, asked_with(use.triage_annotator)]
            except CannotLabel:
                cached = []  # an endpoint without a prompt of the dataset's task kind: nothing to order by
        cache.set(_key(study.pk), cached, TRIAGE_SECONDS)
    return (int(cached[0]), str(cached[1])) if cached else None


def claim_preference(study: Study) -> tuple[str, list[Any]] | None:
    """The triage's ORDER BY expression for the study's claims (`validation.claim_order`), or None."""
    triage = triage_of(study)
    if triage is None:
        return None
    annotator_id, key = triage
    return DISAGREEING_SQL, [annotator_id, key, Outcome.LABELLED]


def forget_triage(sender: Any = None, instance: Any = None, **kwargs: Any) -> None:
    """A saved or deleted ModelUse forgets its study's triage; a new prompt version the triage of
    every study whose triage model it is."""
    if isinstance(instance, ModelUse):
        cache.delete(_key(instance.study_id))
        return
    annotator_id = getattr(instance, "annotator_id", None)
    if annotator_id is not None:
        studies = ModelUse.objects.filter(triage_annotator_id=annotator_id).values_list("study_id", flat=True)
        cache.delete_many([_key(study_id) for study_id in studies])
