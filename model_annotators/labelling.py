"""A labelling job (a long task, base/long_tasks.py): the annotator labels pairs chunk by chunk,
each chunk committed with its progress, so a restarted job goes on with the pairs still unlabelled
under the current prompt. A training run labels from its verified checkpoint in the platform's
storage, an endpoint through model_annotators.endpoint: nothing is downloaded from elsewhere.
"""

import logging
import time
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from base.long_tasks import JobStatus, heartbeat, take
from corpus.models import Pair

from .calibration import calibrate
from .clients import EndpointAsker, RunAsker, read_answer, stored_label
from .models import AnnotatorKind, JobTask, LabellingJob, ModelAnnotator, ModelLabel, Outcome, TaskKind, WritingCheck
from .prompts import fill, parse_answer, with_data_notice
from .scope import asked_with, calibration_pairs
from .writing_checks import writing_checker

logger = logging.getLogger(__name__)

CHUNK = 50


def pairs_to_label(job: LabellingJob, key: str) -> QuerySet[Pair]:
    """The job's pairs not done under `key`: labels, or writing checks of written pairs."""
    annotator = job.annotator
    base = (
        calibration_pairs(annotator) if job.scope == "calibration" else Pair.objects.filter(dataset=annotator.dataset)
    )
    if job.task == JobTask.WRITING_CHECKS:
        checked = WritingCheck.objects.filter(annotator=annotator, asked_with=key).values("pair_id")
        return base.exclude(author_label="").exclude(pk__in=checked).order_by("pk")
    done = ModelLabel.objects.filter(annotator=annotator, asked_with=key).values("pair_id")
    return base.exclude(pk__in=done).order_by("pk")


def run_labelling_job(job_id: int) -> LabellingJob | None:
    """The job's work (Celery task model_annotators.label_pairs); None when it was not takeable."""
    if not take(LabellingJob, job_id):
        return None
    job = LabellingJob.objects.select_related("annotator__dataset", "annotator__training_run__snapshot").get(pk=job_id)
    try:
        with heartbeat(LabellingJob, job.pk):
            _label(job)
    except Exception as error:  # the job's row says what went wrong; the worker lives on
        logger.exception("labelling job %s failed", job.pk)
        LabellingJob.objects.filter(pk=job.pk).update(
            status=JobStatus.FAILED, error=str(error)[:2000], finished_at=timezone.now()
        )
        job.refresh_from_db()
        return job
    if job.task == JobTask.LABELS:
        calibrate(job.annotator)
    LabellingJob.objects.filter(pk=job.pk).update(
        status=JobStatus.DONE, progress=1.0, stage="done", finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job


def _label(job: LabellingJob) -> None:
    annotator = job.annotator
    writing = job.task == JobTask.WRITING_CHECKS
    key = asked_with(annotator, TaskKind.WRITING if writing else None)
    todo = pairs_to_label(job, key)
    pks = list(todo.values_list("pk", flat=True)[: job.limit] if job.limit else todo.values_list("pk", flat=True))
    total = len(pks)
    LabellingJob.objects.filter(pk=job.pk).update(pairs_total=total, pairs_done=0, stage="labelling")
    labeller = writing_checker(annotator) if writing else _labeller(annotator)
    table: Any = WritingCheck if writing else ModelLabel
    for start in range(0, total, CHUNK):
        chunk = list(
            Pair.objects.filter(pk__in=pks[start : start + CHUNK]).select_related("premise", "dataset").order_by("pk")
        )
        rows = labeller(chunk, key)
        # A restart after a killed process may meet rows of its own: the first one stays.
        table.objects.bulk_create(rows, ignore_conflicts=True)
        done = min(total, start + CHUNK)
        LabellingJob.objects.filter(pk=job.pk).update(pairs_done=done, progress=done / total if total else 1.0)


def _labeller(annotator: ModelAnnotator) -> Any:
    return _RunLabeller(annotator) if annotator.kind == AnnotatorKind.RUN else _EndpointLabeller(annotator)


class _EndpointLabeller(EndpointAsker):
    def __call__(self, pairs: Sequence[Pair], key: str) -> list[ModelLabel]:
        rows = []
        for pair in pairs:
            answer = self.endpoint.ask(
                with_data_notice(self.prompt.system), fill(self.prompt.template, pair.premise.text, pair.hypothesis)
            )
            row = ModelLabel(annotator=self.annotator, pair=pair, asked_with=key)
            row.label = read_answer(row, answer, lambda text: parse_answer(text, self.prompt.task_kind))
            rows.append(row)
        return rows


class _RunLabeller(RunAsker):
    def __call__(self, pairs: Sequence[Pair], key: str) -> list[ModelLabel]:
        started = time.monotonic()
        predicted = self.model.predict_many([(pair.premise.text, pair.hypothesis) for pair in pairs])
        each_ms = int((time.monotonic() - started) * 1000 / max(1, len(pairs)))
        rows = []
        for pair, word in zip(pairs, predicted, strict=True):
            label = stored_label(word)
            rows.append(
                ModelLabel(
                    annotator=self.annotator,
                    pair=pair,
                    asked_with=key,
                    outcome=Outcome.LABELLED if label else Outcome.UNPARSEABLE,
                    label=label,
                    raw_answer=word,
                    latency_ms=each_ms,
                )
            )
        return rows
