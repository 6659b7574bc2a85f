"""Reads of the model annotators page, scoped through teams/access.py; the view only renders."""

from typing import Any

from corpus.scope import EVERYTHING, Scope
from crowd.models import Study
from model_annotators import selectors, writing_checks
from model_annotators.models import LabellingJob, ModelAnnotator, ModelUse
from model_annotators.scope import CannotLabel, asked_with, task_kind_of
from teams import access

from ..figure_cache import cached

JOBS_SHOWN = 50


def jobs(user: Any, ids: list[int] | None = None) -> list[LabellingJob]:
    """The user's teams' latest labelling jobs (only those of `ids` when given, for the progress poll)."""
    rows = LabellingJob.objects.select_related("annotator__dataset").order_by("-created_at", "-pk")
    if ids is not None:
        rows = rows.filter(pk__in=ids)
    return list(access.scoped(rows, user, via="annotator__dataset__team")[:JOBS_SHOWN])


def job(pk: int) -> LabellingJob:
    """The job as it is now (in the embedded mode it has run already when the form answers)."""
    return LabellingJob.objects.get(pk=pk)


def annotators(user: Any) -> list[ModelAnnotator]:
    """The user's teams' annotators, each with `asked_now`: the prompt it would be asked with now."""
    rows = list(
        access.scoped(
            ModelAnnotator.objects.select_related("dataset", "study", "training_run").order_by("dataset__slug", "name"),
            user,
            via="dataset__team",
        )
    )
    for annotator in rows:
        try:
            annotator.asked_now = asked_with(annotator)  # type: ignore[attr-defined]
        except CannotLabel:
            annotator.asked_now = f"no {task_kind_of(annotator)} prompt"  # type: ignore[attr-defined]
    return rows


def studies_with_uses(user: Any) -> list[tuple[Study, ModelUse | None]]:
    """The user's teams' studies, each with its model uses (None: none set)."""
    studies = list(access.scoped(Study.objects.select_related("dataset").order_by("slug"), user))
    uses = {
        use.study_id: use
        for use in ModelUse.objects.filter(study__in=studies).select_related(
            "triage_annotator", "vote_annotator", "writing_checks_annotator"
        )
    }
    return [(study, uses.get(study.pk)) for study in studies]


def annotator_to_act_on(user: Any, pk: int) -> ModelAnnotator:
    """The annotator `pk` of the user's teams where they may do research (404 foreign or unknown)."""
    return access.get_or_404(
        ModelAnnotator.objects.select_related("dataset"), user, access.RESEARCH, via="dataset__team", pk=pk
    )


def study_and_uses(user: Any, slug: str) -> tuple[Study, ModelUse]:
    """The study (404 unless the user may do research on it) and its uses (an unsaved row when none)."""
    study = access.get_or_404(Study.objects.select_related("dataset"), user, access.RESEARCH, slug=slug)
    return study, ModelUse.objects.filter(study=study).first() or ModelUse(study=study)


def calibrations(scope: Scope) -> list[dict[str, Any]]:
    """The scope's model annotators with their latest calibrations, from the figure cache."""
    return cached("model-calibrations", scope, lambda: selectors.calibration_rows(scope))


def checks_by_writer(worker_ids: list[int]) -> dict[int, dict[str, int]]:
    """The writing checks of the writers of a workers page; none asked for when no study checks writing."""
    annotators = cached("writing-check-annotators", EVERYTHING, writing_checks.writing_check_annotators)
    return writing_checks.checks_by_writer(worker_ids, annotators)
