"""Celery tasks of the corpus app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from . import tallies


@shared_task(name="corpus.fold_tallies")
def fold_tallies() -> int:
    """On the beat schedule (a worker's beat, or the embedded mode's): every tally's deltas folded
    into one row per key (corpus.tallies.MAINTAINED), off every request's path. Returns the rows the fold wrote."""
    return tallies.fold()
