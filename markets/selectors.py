"""Reads of the markets app: what a study's market panel shows."""

from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum

from crowd.holds import hold_waits, money_may_go
from crowd.models import Study, StudySession
from quality import bonuses
from quality.models import BonusEntry, BonusKind

from .models import BatchState, BonusBatch, MarketCall, MarketConnection, PaymentState, ReviewState

RECENT_CALLS = 20


def connected_studies() -> list[Study]:
    """Every study, its connection (or None) attached as `.connection`."""
    connections = {c.study_id: c for c in MarketConnection.objects.all()}
    studies = list(Study.objects.order_by("slug"))
    for study in studies:
        study.connection = connections.get(study.pk)  # type: ignore[attr-defined]
    return studies


def panel(study: Study) -> dict[str, Any]:
    """The market panel of one study: its connection, sessions to decide, money owed and unsure, calls."""
    connection = MarketConnection.objects.filter(study=study).first()
    complete = StudySession.objects.filter(study=study, completed_at__isnull=False).select_related(
        "worker", "market_review"
    )
    # A held code a researcher released is approved as one never held; a refused one is not.
    to_approve = list(complete.filter(money_may_go(), closed_at__isnull=True, market_review__isnull=True)[:500])
    held = list(complete.filter(hold_waits(), market_review__isnull=True)[:200])
    decided = list(complete.filter(market_review__isnull=False).order_by("-market_review__updated_at")[:50])
    unsure_reviews = complete.filter(market_review__state=ReviewState.SENT).count()
    closed = list(StudySession.objects.filter(study=study, closed_at__isnull=False).select_related("worker")[:50])
    owed = BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)
    # What the payer would take: payable (no held code waits) and held by no payer.
    free = owed.filter(bonuses.payable()).filter(
        Q(market_payment__isnull=True) | Q(market_payment__state=PaymentState.REFUSED)
    )
    in_flight = owed.filter(market_payment__state__in=[PaymentState.CLAIMED, PaymentState.SENT])
    money = {
        "owed": free.aggregate(n=Count("id"), total=Sum("amount")),
        "in_flight": in_flight.aggregate(n=Count("id"), total=Sum("amount")),
        "paid_here": BonusEntry.objects.filter(
            study=study, kind=BonusKind.PAID, pays__market_payment__state=PaymentState.PAID
        ).aggregate(n=Count("id"), total=Sum("amount")),
    }
    for row in money.values():
        row["total"] = row["total"] or Decimal("0")
    return {
        "connection": connection,
        "to_approve": to_approve,
        "held": held,
        "decided": decided,
        "unsure_reviews": unsure_reviews,
        "closed": closed,
        "money": money,
        "unsure_batches": list(BonusBatch.objects.filter(connection=connection, state=BatchState.PAYING))
        if connection
        else [],
        "calls": list(MarketCall.objects.filter(connection=connection)[:RECENT_CALLS]) if connection else [],
        "refused": list(in_flight.none())
        if connection is None
        else list(
            owed.filter(market_payment__state=PaymentState.REFUSED)
            .exclude(market_payment__last_error="")
            .values_list("market_payment__last_error", flat=True)
            .distinct()[:5]
        ),
    }


def session_of(study: Study, session_id: int) -> StudySession | None:
    return StudySession.objects.filter(study=study, pk=session_id).select_related("study", "worker").first()


def batch_of(study: Study, batch_id: int) -> BonusBatch | None:
    return BonusBatch.objects.filter(connection__study=study, pk=batch_id).first()
