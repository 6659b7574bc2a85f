"""Celery tasks of the authorship app (default queue): the sense score of new hypotheses."""

from celery import shared_task

from base.task_queue import enqueue

from .sense import BATCH, SCORE_TASK, score_unscored


@shared_task(name=SCORE_TASK)
def score_sense() -> int:
    """Score the unscored written pairs a batch at a time; a full batch queues the next."""
    scored = score_unscored(BATCH)
    if scored == BATCH:
        enqueue(SCORE_TASK)
    return scored
