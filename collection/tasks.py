"""Celery tasks of the collection app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from . import hypothesis_tally


@shared_task(name="collection.fold_hypothesis_tally")
def fold_hypothesis_tally() -> int:
    """On the beat schedule (with a broker, TALLY_FOLDS_ON_BEAT): the hypothesis tally's deltas
    folded into one row per key, off every writing submit's path. Returns the rows the fold wrote."""
    return hypothesis_tally.fold()
