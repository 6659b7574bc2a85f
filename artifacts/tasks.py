"""Celery tasks of the artifacts app (default queue): tagging jobs and the new-pair trigger."""

from celery import shared_task

from corpus.models import Dataset

from .models import MonitorRefresh
from .monitoring import REFRESH_TASK, periodic_refresh, refresh_monitor
from .services import ARRIVAL_TASK, TAG_TASK, pairs_arrived, pairs_to_tag, run_tagging_job, start_tagging


@shared_task(name=TAG_TASK)
def tag_pairs(job_id: int) -> dict[str, object]:
    job = run_tagging_job(job_id)
    return {"job": job.pk, "status": job.status, "done": job.done, "error": job.error}


@shared_task(name=ARRIVAL_TASK)
def pairs_arrived_task(dataset_id: int | None = None) -> None:
    pairs_arrived(dataset_id)


@shared_task(name="artifacts.tag_untagged")
def tag_untagged() -> None:
    """Hourly sweep (the beat schedule in annotation_site/celery.py): whatever no trigger caught gets tagged."""
    if pairs_to_tag().exists():
        start_tagging()


@shared_task(name=REFRESH_TASK)
def refresh_monitor_task(
    dataset_id: int | None = None, trigger: str = MonitorRefresh.Trigger.PERIODIC
) -> dict[str, object]:
    dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id is not None else None
    refresh = refresh_monitor(dataset, trigger=trigger)
    return {"refresh": refresh.pk, "status": refresh.status, "error": refresh.error}


@shared_task(name="artifacts.periodic_monitor")
def periodic_monitor() -> None:
    """Hourly (the beat schedule in annotation_site/celery.py): every collected dataset with new pairs gets a refresh."""
    periodic_refresh()
