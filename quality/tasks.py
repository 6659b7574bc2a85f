"""Celery tasks of the quality app, queued by name through annotation_site.celery.enqueue."""

from celery import shared_task

from .aggregation_runs import run_aggregation


@shared_task(name="quality.aggregate_labels")
def aggregate_labels(run_id: int) -> str | None:
    """Fit a run's label models (see aggregation_runs.run_aggregation); its row shows the progress."""
    run = run_aggregation(run_id)
    return None if run is None else run.status


@shared_task(name="quality.auto_exclude_flagged")
def auto_exclude_flagged() -> int:
    """On the beat schedule: exclude flagged workers of studies that opted in (`Study.auto_exclude_flagged`;
    off by default, so nobody is excluded without a researcher unless a study asks for it)."""
    from .services import auto_exclude_flagged as exclude

    outcome = exclude()
    return 0 if outcome is None else outcome.changed
