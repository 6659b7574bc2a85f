from celery import shared_task

from .labelling import run_labelling_job


@shared_task(name="model_annotators.label_pairs")
def label_pairs(job_id: int) -> str | None:
    """Run a labelling job (model_annotators.labelling); its row shows the progress."""
    job = run_labelling_job(job_id)
    return None if job is None else job.status
