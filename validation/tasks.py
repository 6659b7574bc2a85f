"""Celery tasks of the validation app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .grammaticality import GRAMMATICALITY_CLAIMS
from .premise_labels import PREMISE_CLAIMS
from .services import release_expired_claims


@shared_task(name="validation.release_expired_claims")
def release_expired() -> dict[str, int]:
    """On the beat schedule: mark the expired claims of this app's three tasks as expired. The one
    sweep: it keeps what a claim says honest and puts the pairs whose `held_places` went stale back
    into the claim index."""
    return {
        "validation": release_expired_claims(),
        "premise_labels": PREMISE_CLAIMS.release_expired(),
        "grammaticality": GRAMMATICALITY_CLAIMS.release_expired(),
    }
