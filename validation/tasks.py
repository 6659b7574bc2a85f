"""Celery tasks of the validation app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .grammaticality import release_expired_grammaticality_claims
from .premise_labels import release_expired_premise_claims
from .services import release_expired_claims


@shared_task(name="validation.release_expired_claims")
def release_expired() -> dict[str, int]:
    """On the beat schedule: mark the expired claims of this app's three tasks as expired.

    Claims also do it lazily, a few rows at a time, and places held by an expired claim are free
    already (live claims are the unexpired ones); the sweep keeps what a claim says honest and puts
    the pairs whose `held_places` went stale (validation batches) back into the claim index, so the
    index and the dashboards never wait for the next claim that happens to meet them.
    """
    return {
        "validation": release_expired_claims(),
        "premise_labels": release_expired_premise_claims(),
        "grammaticality": release_expired_grammaticality_claims(),
    }
