"""The job pages (aggregation runs, snapshots, training runs): the rows newest first, rows by id
for the progress polls, and one row for a detail page (None: the view says 404)."""

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from artifacts.models import TaggingJob
from base.long_tasks import JobStatus
from collection.models import PremiseImport
from corpus.models import ImportStatus
from importers.models import CorpusImport
from modeling.models import RunStatus, Snapshot, TrainingRun
from privacy.selectors import erasures_after_snapshot
from quality.models import AggregationRun

SHOWN = 50


def aggregation_runs(ids: Iterable[int] | None = None) -> QuerySet[AggregationRun]:
    """Newest first; with `ids`, those runs only (a progress poll)."""
    runs = AggregationRun.objects.select_related("dataset", "created_by")
    return runs if ids is None else runs.filter(pk__in=ids)


def aggregation_run(run_id: int) -> AggregationRun | None:
    return aggregation_runs([run_id]).first()


def finished_aggregation_runs(*, limit: int = 20) -> QuerySet[AggregationRun]:
    """Runs a snapshot can take its gold labels from."""
    return AggregationRun.objects.filter(status=JobStatus.DONE).select_related("dataset")[:limit]


def snapshots(ids: Iterable[int] | None = None) -> QuerySet[Snapshot]:
    """Newest first; with `ids`, those only (a progress poll). Each with its team's `erasures_since`."""
    rows = (
        Snapshot.objects.select_related("created_by")
        .prefetch_related("files")
        .annotate(erasures_since=erasures_after_snapshot())
    )
    return rows if ids is None else rows.filter(pk__in=ids)


def snapshot(snapshot_id: int) -> Snapshot | None:
    return snapshots([snapshot_id]).first()


def finished_snapshots(*, limit: int = SHOWN) -> QuerySet[Snapshot]:
    """Snapshots a training run can be launched on."""
    return Snapshot.objects.filter(status=JobStatus.DONE)[:limit]


def training_runs(ids: Iterable[int] | None = None) -> QuerySet[TrainingRun]:
    """Newest first; with `ids`, those runs only (a progress poll)."""
    runs = TrainingRun.objects.select_related("snapshot", "created_by")
    return runs if ids is None else runs.filter(pk__in=ids)


def training_run(run_id: int) -> TrainingRun | None:
    return training_runs([run_id]).first()


def embedded_queue() -> dict[str, Any] | None:
    """In the embedded mode (no broker), the jobs of this process's one background queue; None
    with a broker, where Celery workers take jobs side by side."""
    from django.conf import settings

    if not settings.CELERY_TASK_ALWAYS_EAGER:
        return None
    running = [
        *(
            f"snapshot export #{pk}"
            for pk in Snapshot.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True)
        ),
        *(
            f"training run {pk} ({model})"
            for pk, model in TrainingRun.objects.filter(status=RunStatus.RUNNING)
            .order_by("pk")
            .values_list("pk", "model")
        ),
        *(
            f"aggregation run {pk}"
            for pk in AggregationRun.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True)
        ),
        *(
            f"tagging job #{pk}"
            for pk in TaggingJob.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True)
        ),
        *(
            f"premise import #{pk}"
            for pk in PremiseImport.objects.filter(status=ImportStatus.RUNNING).values_list("pk", flat=True)
        ),
        *(
            f"corpus import #{pk}"
            for pk in CorpusImport.objects.filter(status=ImportStatus.RUNNING).values_list("pk", flat=True)
        ),
    ]
    waiting = {
        "snapshot exports": Snapshot.objects.filter(status=JobStatus.PENDING).count(),
        "training runs": TrainingRun.objects.filter(status=RunStatus.QUEUED).count(),
        "aggregation runs": AggregationRun.objects.filter(status=JobStatus.PENDING).count(),
        "tagging jobs": TaggingJob.objects.filter(status=JobStatus.QUEUED).count(),
        "imports": PremiseImport.objects.filter(status=ImportStatus.QUEUED).count()
        + CorpusImport.objects.filter(status=ImportStatus.QUEUED).count(),
    }
    return {
        "running": running,
        "waiting": [(kind, n) for kind, n in waiting.items() if n],
        "inline": settings.EMBEDDED_TASKS == "inline",
    }
