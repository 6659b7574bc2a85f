"""Celery tasks of the quality app, queued by name through base.task_queue.enqueue."""

from celery import shared_task

from .aggregation_runs import run_aggregation


@shared_task(name="quality.aggregate_labels")
def aggregate_labels(run_id: int) -> str | None:
    """Fit a run's label models (see aggregation_runs.run_aggregation); its row shows the progress."""
    run = run_aggregation(run_id)
    return None if run is None else run.status


@shared_task(name="quality.aggregate_changed_datasets")
def aggregate_changed_datasets() -> list[int]:
    """On the beat schedule (CORRELATED_CHECK_INTERVAL_SECONDS): an aggregation run, and so the
    correlated-error check, on each code-holding dataset with new labels; the runs' ids."""
    from .aggregation_runs import aggregate_changed_datasets as start_runs

    return [run.pk for run in start_runs()]


@shared_task(name="quality.auto_exclude_flagged")
def auto_exclude_flagged() -> int:
    """On the beat schedule: exclude flagged workers of studies that opted in (`Study.auto_exclude_flagged`;
    off by default, so nobody is excluded without a researcher unless a study asks for it)."""
    from .services import auto_exclude_flagged as exclude

    return sum(outcome.changed for outcome in exclude())


@shared_task(name="quality.refresh_worker_flags")
def refresh_worker_flags() -> list[str]:
    """Queued (coalesced) after label writes: recompute the maintained worker-flag rows of every
    scope the pages have asked for (`quality.flag_rows`); the scopes' keys."""
    from .flag_rows import refresh_every_scope

    return refresh_every_scope()
