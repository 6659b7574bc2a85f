"""Celery tasks of the privacy app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .services import apply_retention


@shared_task(name="privacy.apply_retention")
def apply_retention_task() -> dict[str, int]:
    """Daily on the beat: what outlived its study's retention pseudonymised (idempotent)."""
    return dict(apply_retention().changed)
