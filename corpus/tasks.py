"""Celery tasks of the corpus app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from . import tallies


@shared_task(name="corpus.fold_tallies")
def fold_tallies() -> int:
    """On the beat schedule (with a broker, TALLY_FOLDS_ON_BEAT): the tallies' deltas folded into
    one row per key, off every request's path. Returns the rows the fold wrote."""
    return tallies.fold()
