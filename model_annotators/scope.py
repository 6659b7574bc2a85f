"""What an annotator is asked and on which pairs it is measured: its task kind (by the dataset),
its current prompt, the key its labels are stored under, its calibration split."""

from django.db.models import QuerySet

from corpus.labels import NO_GOLD
from corpus.models import ItemKind, LabelScheme, Pair, Split

from .models import AnnotatorKind, ModelAnnotator, PromptVersion, TaskKind


class CannotLabel(Exception):
    """The annotator cannot label now (no prompt, a checkpoint that does not match its run)."""


def task_kind_of(annotator: ModelAnnotator) -> str:
    dataset = annotator.dataset
    if dataset.item_kind == ItemKind.MULTI_PREMISE:
        return TaskKind.MPE
    if dataset.label_scheme in (LabelScheme.TWO_WAY, LabelScheme.ORDINAL):
        return TaskKind.TWO_WAY
    return TaskKind.VALIDATION


def current_prompt(annotator: ModelAnnotator, task_kind: str | None = None) -> PromptVersion | None:
    """The latest version of the annotator's prompt of `task_kind` (by default its labels' kind)."""
    kind = task_kind or task_kind_of(annotator)
    return annotator.prompts.filter(task_kind=kind).order_by("-version").first()


def asked_with(annotator: ModelAnnotator, task_kind: str | None = None) -> str:
    """The key of what the annotator is asked now: its run, or its current prompt's version (of
    `task_kind`, by default its labels' kind; TaskKind.WRITING for the writing checks)."""
    if annotator.kind == AnnotatorKind.RUN:
        return f"run-{annotator.training_run_id}"
    prompt = current_prompt(annotator, task_kind)
    if prompt is None:
        raise CannotLabel(f"the annotator has no {task_kind or task_kind_of(annotator)} prompt")
    return f"{prompt.task_kind}-v{prompt.version}"


def calibration_pairs(annotator: ModelAnnotator) -> QuerySet[Pair]:
    """The pairs the annotator is measured on: the dataset's pairs with a human gold label, and its
    catch trials, less what it may have seen. A run of this platform trained on its snapshot's
    train split: when the snapshot holds this dataset, its train pairs are left out."""
    from quality.models import ReferenceLabel

    pairs = Pair.objects.filter(dataset=annotator.dataset)
    catch = ReferenceLabel.objects.filter(pair__dataset=annotator.dataset, is_catch_trial=True).values("pair_id")
    chosen = pairs.exclude(gold_label=NO_GOLD) | pairs.filter(pk__in=catch)
    run = annotator.training_run
    if run is not None:
        slugs = run.snapshot.datasets or []
        if not slugs or annotator.dataset.slug in slugs:
            chosen = chosen.exclude(premise__split=Split.TRAIN)
    return chosen
