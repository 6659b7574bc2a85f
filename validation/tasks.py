"""Celery tasks of the validation app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from .grammaticality import GRAMMATICALITY_CLAIMS
from .premise_labels import PREMISE_CLAIMS
from .services import release_expired_claims


@shared_task(name="validation.release_expired_claims")
def release_expired() -> dict[str, int]:
    """On the beat schedule: mark the expired claims of this app's three tasks as expired.

    Places held by an expired claim are free already (live claims are the unexpired ones); a claim
    marks only the worker's own and its candidates' expired claims, so this is the one sweep: it
    keeps what a claim says honest and puts the pairs whose `held_places` went stale (validation
    batches) back into the claim index. Of validation claims it reads the open ones only (the
    partial index `valclaim_open`), never the history of submitted ones.
    """
    return {
        "validation": release_expired_claims(),
        "premise_labels": PREMISE_CLAIMS.release_expired(),
        "grammaticality": GRAMMATICALITY_CLAIMS.release_expired(),
    }
