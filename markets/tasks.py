"""The markets' periodic work (CELERY_BEAT_SCHEDULE): MTurk polled, checked sessions approved,
unsure payments reconciled. Each connection on its own: one market's failure stops no other."""

import logging
from typing import Any

from celery import shared_task
from django.db import OperationalError

from . import events, identity, payments, reviews
from .clients import MarketError
from .models import ConnectedMarket, MarketConnection
from .sealing import SealingUnavailable

log = logging.getLogger(__name__)

# A market that cannot be reached is asked again after 30 s, 1, 2, 4 ... minutes, up to an hour apart;
# the beat's sweep asks after that.
CHECK_RETRIES = 8


@shared_task(name="markets.poll_mturk_assignments")
def poll_mturk_assignments() -> list[str]:
    done = []
    for connection in MarketConnection.objects.filter(market=ConnectedMarket.MTURK).select_related("study"):
        try:
            done.append(events.poll_mturk(connection))
        except (MarketError, SealingUnavailable) as error:
            log.warning("polling MTurk for %s failed: %s", connection.study.slug, error)
    return done


@shared_task(name="markets.approve_checked_sessions")
def approve_checked_sessions() -> list[str]:
    """Approve checked sessions where that is automatic, and send again the reviews (approvals and
    rejections) queued on every connection: a network failure keeps a researcher's decision in the
    queue with its reason."""
    done = []
    for connection in MarketConnection.objects.select_related("study"):
        try:
            if connection.approve_automatically:
                done.append(reviews.approve_sessions(connection.study, automatic=True).line("Approved"))
                rejected = reviews.retry_queued_rejections(connection)
                if rejected.confirmed or rejected.failed or rejected.unanswered:
                    done.append(rejected.line("Rejected (queued)"))
            else:
                done.append(reviews.retry_queued_reviews(connection).line("Decided (queued)"))
        except (MarketError, SealingUnavailable) as error:
            log.warning("approving sessions of %s failed: %s", connection.study.slug, error)
    return done


@shared_task(name="markets.reconcile_bonus_payments")
def reconcile_bonus_payments() -> list[str]:
    done = []
    for connection in MarketConnection.objects.select_related("study"):
        try:
            outcome = payments.reconcile_payments(connection)
        except (MarketError, SealingUnavailable) as error:
            log.warning("reconciling payments of %s failed: %s", connection.study.slug, error)
            continue
        done.append(outcome.line(connection.study.bonus_currency))
    return done


@shared_task(name="markets.check_arrival", bind=True, max_retries=CHECK_RETRIES)
def check_arrival(self: Any, session_id: int) -> str:
    """Ask the market whether an arrival's ids are its record's (markets.identity), once; again
    later while the market cannot answer."""
    try:
        answer = identity.check_session(session_id)
    except OperationalError as error:
        # A lock the participant's own submit held, or the database going away: nothing was stored.
        if self.request.is_eager or self.request.retries >= CHECK_RETRIES:
            raise
        raise self.retry(countdown=5, exc=error) from error
    if answer is None:
        return "not waiting"
    if answer.ask_again and not self.request.is_eager and self.request.retries < CHECK_RETRIES:
        # In the embedded mode a retry would run at once, inside the caller: the sweep asks later.
        raise self.retry(countdown=min(30 * 2**self.request.retries, 3600))
    return answer.state


@shared_task(name="markets.check_pending_arrivals")
def check_pending_arrivals() -> list[str]:
    """The beat's sweep: every session still waiting for its market's word is asked again."""
    done = []
    for session_id in identity.pending_sessions():
        answer = identity.check_session(session_id)
        done.append(f"{session_id}: {answer.state if answer else 'not waiting'}")
    return done
