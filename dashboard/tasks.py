"""Recomputing dashboard figures in the background when the corpus is large."""

from celery import shared_task

from . import queries  # noqa: F401  (registers every refreshable figure)
from .figure_cache import refresh_figure_now, refresh_study_figure_now


@shared_task(name="dashboard.refresh_figure")
def refresh_figure(name: str, scope: int | str | None, split: str | None) -> None:
    refresh_figure_now(name, scope, split)


@shared_task(name="dashboard.refresh_study_figure")
def refresh_study_figure(name: str, study_id: int) -> None:
    refresh_study_figure_now(name, study_id)
