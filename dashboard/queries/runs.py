"""The job pages (aggregation runs, snapshots, training runs): recent rows, rows by id for the
progress polls, and one row for a detail page (None when there is no such row: the view says 404)."""

from modeling.models import JobStatus, Snapshot, TrainingRun
from quality.models import AggregationRun, AggregationStatus

SHOWN = 50


def _aggregation_runs():
    return AggregationRun.objects.select_related("dataset", "created_by")


def recent_aggregation_runs(limit=SHOWN):
    return _aggregation_runs()[:limit]


def aggregation_runs_by_id(ids):
    return _aggregation_runs().filter(pk__in=ids)


def aggregation_run(run_id):
    return _aggregation_runs().filter(pk=run_id).first()


def finished_aggregation_runs(limit=20):
    """Runs a snapshot can take its gold labels from."""
    return AggregationRun.objects.filter(status=AggregationStatus.DONE).select_related("dataset")[:limit]


def _snapshots():
    return Snapshot.objects.select_related("created_by").prefetch_related("files")


def recent_snapshots(limit=SHOWN):
    return _snapshots()[:limit]


def snapshots_by_id(ids):
    return _snapshots().filter(pk__in=ids)


def snapshot(snapshot_id):
    return _snapshots().filter(pk=snapshot_id).first()


def finished_snapshots(limit=SHOWN):
    """Snapshots a training run can be launched on."""
    return Snapshot.objects.filter(status=JobStatus.DONE)[:limit]


def recent_training_runs(limit=SHOWN):
    return TrainingRun.objects.select_related("snapshot")[:limit]


def training_runs_by_id(ids):
    return TrainingRun.objects.filter(pk__in=ids).select_related("snapshot")


def training_run(run_id):
    return TrainingRun.objects.select_related("snapshot", "created_by").filter(pk=run_id).first()
