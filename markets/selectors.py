"""Reads of the markets app: what a study's market panel shows."""

from decimal import Decimal
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import Count, F, Max, Q, QuerySet, Sum

from base.subquery import EqualsAny
from crowd.holds import hold_waits, money_may_go
from crowd.models import Study, StudySession
from quality import bonuses
from quality.bonus_lines import UnpaidGroup
from quality.models import BonusEntry, BonusKind

from .answers import settled_after
from .models import (
    IN_FLIGHT,
    BatchState,
    BonusBatch,
    BonusPayment,
    MarketCall,
    MarketConnection,
    Payer,
    PaymentState,
    ReviewState,
)

RECENT_CALLS = 20


# --- the one 'owed' rule and the payment machine's states -------------------------------------
# Every payer asks it: the API payer (payments._claim_owed), a payment file's download
# (hand_payments.claim_for_file) and the bonus page. A bonus is owed when the ledger has it unpaid and
# payable (quality.bonuses.unpaid) and no payer holds it: no BonusPayment, or one released. A
# bonus held by one payer is therefore never listed, sent or marked paid by another. Confirmed is
# the ledger's paid row, the one record of "paid".


def free_of_payers() -> Q:
    return Q(market_payment__isnull=True) | Q(market_payment__state=PaymentState.RELEASED)


def owed_entries(study: Study) -> QuerySet[BonusEntry]:
    """The study's bonuses owed and held by no payer, oldest first."""
    return bonuses.unpaid(study).filter(free_of_payers())


def _paying(study: Study, **state: Any) -> EqualsAny:
    """The bonuses of the study's payments in `state`, as a filter: the payments read from their
    index by connection and state, then each bonus by its key (`id = ANY(ARRAY(...))`), with no
    condition on the study beside it (a payment's bonus is its connection's study's: every payer
    claims that study's owed bonuses). As `id IN (subquery)`, or beside the study's condition, a
    planner with statistics older than the bonuses read the payments once per unpaid bonus of the
    study, or every bonus of the study against the list."""
    payments = BonusPayment.objects.filter(connection__study=study, **state).values("earned_id")
    return EqualsAny(F("pk"), ArraySubquery(payments))


def held_by_files(study: Study) -> QuerySet[BonusEntry]:
    """Bonuses a downloaded payment file sent: the researcher confirms (mark paid) or releases them."""
    return bonuses.unpaid_by_key(_paying(study, payer=Payer.FILE, state=PaymentState.SENT))


def held_by_the_api(study: Study) -> QuerySet[BonusEntry]:
    """Bonuses the API payer holds: claimed, or sent and waiting for the market's confirmation
    (its answer lost, or one that proved nothing: unknown)."""
    return bonuses.unpaid_by_key(_paying(study, payer=Payer.API, state__in=IN_FLIGHT))


def set_aside(study: Study) -> QuerySet[BonusEntry]:
    """Bonuses whose participant the market refused: paid by hand, or released to be tried again."""
    return bonuses.unpaid_by_key(_paying(study, state=PaymentState.ASIDE))


def in_flight_entries(study: Study) -> QuerySet[BonusEntry]:
    """The study's bonuses claimed or sent by a payer (the API, or a downloaded file) and not yet
    confirmed. Payable or not: a hold that came after the money left does not call it back."""
    return BonusEntry.objects.filter(_paying(study, state__in=IN_FLIGHT), kind=BonusKind.EARNED, payment__isnull=True)


def paid_entries(study: Study) -> QuerySet[BonusEntry]:
    """The study's confirmed bonuses: the ledger's paid rows, whichever payer paid them."""
    return BonusEntry.objects.filter(study=study, kind=BonusKind.PAID)


def _figure(rows: QuerySet[BonusEntry]) -> dict[str, Any]:
    row = rows.aggregate(n=Count("id"), total=Sum("amount"))
    return {"n": row["n"], "total": row["total"] or Decimal("0")}


def machine_figures(study: Study, *, connected: bool | None = None) -> dict[str, dict[str, Any]]:
    """Count and amount of the study's bonuses in each state of the payment machine, by the one
    rule: owed (no payer holds it), in flight (claimed or sent, by the API or a downloaded file),
    set aside, paid (the ledger). A study without a connection has owed and paid only (`connected`:
    whether it has one, when the caller knows). The unpaid and paid money is the ledger's tally's;
    only the bonuses a payer holds are read one by one."""
    if connected is None:
        connected = MarketConnection.objects.filter(study=study).exists()
    tallied = bonuses.tallied_figures(study)
    if not connected:
        return {
            "owed": tallied["unpaid"],
            "in_flight": _figure(BonusEntry.objects.none()),
            "aside": _figure(BonusEntry.objects.none()),
            "paid": tallied["paid"],
        }
    held = _figure(held_by_payers(study))
    return {
        "owed": {"n": tallied["unpaid"]["n"] - held["n"], "total": tallied["unpaid"]["total"] - held["total"]},
        "in_flight": _figure(in_flight_entries(study)),
        "aside": _figure(set_aside(study)),
        "paid": tallied["paid"],
    }


HELD = tuple(state for state in PaymentState if state != PaymentState.RELEASED)


def held_by_payers(study: Study) -> QuerySet[BonusEntry]:
    """The study's unpaid, payable bonuses a payer holds (claimed, sent, unsure or set aside): the
    ones `owed_entries` leaves out, found from the study's connection's payments in those states (an
    index of theirs), not from the study's every unpaid bonus."""
    return bonuses.unpaid_by_key(_paying(study, state__in=HELD))


def confirmable_by_hand(study: Study, connected: bool | None = None) -> QuerySet[BonusEntry]:
    """The study's unpaid bonuses a researcher may mark paid by hand, oldest first: every payable
    one without a connection; with one, those no payer holds, sent in a downloaded file, or set
    aside (never one the API payer holds). `connected`: whether the study has a connection, when
    the caller knows."""
    if connected is None:
        connected = MarketConnection.objects.filter(study=study).exists()
    if not connected:
        return bonuses.unpaid(study)
    return bonuses.unpaid(study).filter(_confirmable_when_connected())


def _confirmable_when_connected() -> Q:
    return (
        free_of_payers()
        | Q(market_payment__payer=Payer.FILE, market_payment__state=PaymentState.SENT)
        | Q(market_payment__state=PaymentState.ASIDE)
    )


def confirmable_groups(study: Study, connected: bool) -> list[UnpaidGroup]:
    """`confirmable_by_hand` per worker, session and cause (`quality.bonuses.tallied_groups`): the
    tally's groups less the held bonuses no researcher may mark paid, read one by one."""
    if not connected:
        return bonuses.tallied_groups(study)
    return bonuses.tallied_groups(study, less=held_by_payers(study).exclude(_confirmable_when_connected()))


def bonus_page_money(study: Study) -> dict[str, Any]:
    """The bonus page's money by the one rule: what may be confirmed by hand (owed, sent by a
    downloaded file, or set aside) as rows and as groups, how many bonuses the API payer holds and
    files sent, what was set aside, and the machine's figures (owed, in flight, set aside, paid)."""
    connected = MarketConnection.objects.filter(study=study).exists()
    figures = machine_figures(study, connected=connected)
    confirmable = {
        "confirmable": confirmable_by_hand(study, connected),
        "confirmable_groups": confirmable_groups(study, connected),
    }
    if not connected:
        return {**confirmable, "api": 0, "files": 0, "aside": [], "figures": figures}
    return {
        **confirmable,
        "api": held_by_the_api(study).count(),
        "files": held_by_files(study).count(),
        "aside": list(set_aside(study).select_related("market_payment")),
        "figures": figures,
    }


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
    held = list(complete.filter(hold_waits(), market_review__isnull=True).prefetch_related("code_holds")[:200])
    decided = list(complete.filter(market_review__isnull=False).order_by("-market_review__updated_at")[:50])
    unsure_reviews = complete.filter(market_review__state=ReviewState.SENT).count()
    closed = list(StudySession.objects.filter(study=study, closed_at__isnull=False).select_related("worker")[:50])
    # The machine's figures by the one rule: owed (what a payer would take), in flight, paid.
    figures = machine_figures(study, connected=connection is not None)
    money = {state: figures[state] for state in ("owed", "in_flight", "paid")}
    return {
        "connection": connection,
        "to_approve": to_approve,
        "held": held,
        "decided": decided,
        "unsure_reviews": unsure_reviews,
        "closed": closed,
        "money": money,
        "unsure_batches": unsure_batches(connection) if connection else [],
        "calls": list(MarketCall.objects.filter(connection=connection)[:RECENT_CALLS]) if connection else [],
        "refused": [] if connection is None else last_refusals(study),
    }


def last_refusals(study: Study, most: int = 5) -> list[str]:
    """The market's words for the study's latest refused bonuses (released to be tried again), each
    said once, newest first: many bonuses of one participant are refused for one reason."""
    refused = (
        BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)
        .filter(market_payment__state=PaymentState.RELEASED)
        .exclude(market_payment__last_error="")
        # Without the model's ordering, whose columns would join the grouping.
        .order_by()
        .values("market_payment__last_error")
        .annotate(latest=Max("market_payment__pk"))
        .order_by("-latest")
    )
    return [row["market_payment__last_error"] for row in refused[:most]]


def unsure_batches(connection: MarketConnection) -> list[BonusBatch]:
    """Bulk bonuses whose pay was sent without Prolific's confirmation, each with `not_paid_from`:
    the time from which a read of Prolific's record may say it was not paid (answers.read_settles)."""
    batches = list(BonusBatch.objects.filter(connection=connection, state=BatchState.PAYING).order_by("pk"))
    for batch in batches:
        batch.not_paid_from = settled_after(batch.pay_sent_at) if batch.pay_sent_at else None  # type: ignore[attr-defined]
    return batches


def session_of(study: Study, session_id: int) -> StudySession | None:
    return StudySession.objects.filter(study=study, pk=session_id).select_related("study", "worker").first()


def batch_of(study: Study, batch_id: int) -> BonusBatch | None:
    return BonusBatch.objects.filter(connection__study=study, pk=batch_id).first()
