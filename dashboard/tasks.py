"""Recomputing dashboard figures in the background when the corpus is large."""
from celery import shared_task

from . import stats


@shared_task(name="dashboard.refresh_figure")
def refresh_figure(name, dataset_id, split):
    stats.refresh_figure_now(name, dataset_id, split)
