"""The markets' periodic work (CELERY_BEAT_SCHEDULE): MTurk polled, checked sessions approved,
unsure payments reconciled. Each connection on its own: one market's failure stops no other."""

import logging

from celery import shared_task

from . import services
from .clients import MarketError
from .models import ConnectedMarket, MarketConnection
from .sealing import SealingUnavailable

log = logging.getLogger(__name__)


@shared_task(name="markets.poll_mturk_assignments")
def poll_mturk_assignments() -> list[str]:
    done = []
    for connection in MarketConnection.objects.filter(market=ConnectedMarket.MTURK).select_related("study"):
        try:
            done.append(services.poll_mturk(connection))
        except (MarketError, SealingUnavailable) as error:
            log.warning("polling MTurk for %s failed: %s", connection.study.slug, error)
    return done


@shared_task(name="markets.approve_checked_sessions")
def approve_checked_sessions() -> list[str]:
    done = []
    for connection in MarketConnection.objects.filter(approve_automatically=True).select_related("study"):
        try:
            done.append(services.approve_sessions(connection.study, automatic=True).line("Approved"))
        except (MarketError, SealingUnavailable) as error:
            log.warning("approving sessions of %s failed: %s", connection.study.slug, error)
    return done


@shared_task(name="markets.reconcile_bonus_payments")
def reconcile_bonus_payments() -> list[str]:
    done = []
    for connection in MarketConnection.objects.select_related("study"):
        try:
            outcome = services.reconcile_payments(connection)
        except (MarketError, SealingUnavailable) as error:
            log.warning("reconciling payments of %s failed: %s", connection.study.slug, error)
            continue
        done.append(outcome.line(connection.study.bonus_currency))
    return done
