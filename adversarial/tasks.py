"""Celery tasks of the adversarial app: closing rounds move on by themselves (beat, and once at close)."""

from celery import shared_task

from .rounds import ADVANCE_TASK, advance_all


@shared_task(name=ADVANCE_TASK)
def advance_rounds() -> list[int]:
    return [r.pk for r in advance_all()]
