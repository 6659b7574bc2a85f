"""Reads of the markets app: what a study's market panel shows."""

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import BooleanField, ExpressionWrapper, F, Max, Q, QuerySet, Sum

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
    HeldBonusTally,
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


# The payments that put a bonus in each of the machine's sets, asked by the sets' querysets below
# and by the held bonuses' one read (`held_bonuses`) alike.
SENT_IN_A_FILE = {"payer": Payer.FILE, "state": PaymentState.SENT}
HELD_BY_THE_API = {"payer": Payer.API, "state__in": IN_FLIGHT}
SET_ASIDE = {"state": PaymentState.ASIDE}
FLYING = {"state__in": IN_FLIGHT}
HELD = tuple(state for state in PaymentState if state != PaymentState.RELEASED)


def held_by_files(study: Study) -> QuerySet[BonusEntry]:
    """Bonuses a downloaded payment file sent: the researcher confirms (mark paid) or releases them."""
    return bonuses.unpaid_by_key(_paying(study, **SENT_IN_A_FILE))


def held_by_the_api(study: Study) -> QuerySet[BonusEntry]:
    """Bonuses the API payer holds: claimed, or sent and waiting for the market's confirmation
    (its answer lost, or one that proved nothing: unknown)."""
    return bonuses.unpaid_by_key(_paying(study, **HELD_BY_THE_API))


def set_aside(study: Study) -> QuerySet[BonusEntry]:
    """Bonuses whose participant the market refused: paid by hand, or released to be tried again."""
    return bonuses.unpaid_by_key(_paying(study, **SET_ASIDE))


def _unpaid_held(study: Study, **state: Any) -> QuerySet[BonusEntry]:
    return BonusEntry.objects.filter(_paying(study, **state), kind=BonusKind.EARNED, payment__isnull=True)


def in_flight_tally(study: Study) -> QuerySet[HeldBonusTally]:
    """`in_flight_entries` summed: the held bonuses' tally rows of the study's payments in flight
    (a row per session, cause, currency, payer and state), for a reader that sums their amounts."""
    return HeldBonusTally.objects.filter(connection__study=study, **FLYING).exclude(bonuses=0)


def in_flight_entries(study: Study) -> QuerySet[BonusEntry]:
    """The study's bonuses claimed or sent by a payer (the API, or a downloaded file) and not yet
    confirmed. Payable or not: a hold that came after the money left does not call it back."""
    return _unpaid_held(study, **FLYING)


@dataclass(frozen=True)
class HeldBonuses:
    """Unpaid bonuses payers hold, of one session and cause, in the same sets of the payment
    machine, as the bonus page sums them: how many, their sum and the hash of their ids
    (`quality.bonus_lines.ids_hash`), and the sets, each asked of its rule in SQL: payable
    (`quality.bonuses.payable`), in flight, held by the API, sent in a file, set aside, confirmable
    by hand."""

    session_id: int | None
    cause: str
    bonuses: int
    amount: Decimal
    ids_hash: int
    payable: bool
    in_flight: bool
    by_the_api: bool
    by_files: bool
    aside: bool
    confirmable: bool


SETS = ("is_payable", "is_in_flight", "is_by_the_api", "is_by_files", "is_aside", "is_confirmable")


def _paid_as(state: dict[str, Any]) -> Q:
    """The bonuses whose payment is in `state` (one of the sets above), as a filter on the ledger."""
    return Q(**{f"market_payment__{key}": value for key, value in state.items()})


def _held_as(state: dict[str, Any]) -> Q:
    """The held bonuses' tally rows of payments in `state`, as a filter on the tally."""
    return Q(**state)


def held_bonuses(study: Study) -> list[HeldBonuses]:
    """The study's unpaid bonuses a payer holds (in any state but released), payable or not, summed
    per session, cause and sets in one statement from the held bonuses' tally (`HeldBonusTally`,
    kept by triggers on the payments): a row per session and state, not per bonus. Each set is asked
    of its payments' rule (`_held_as`); payable is `quality.bonuses.payable`, asked of the session."""

    def asked(rule: Q) -> ExpressionWrapper[Any]:
        return ExpressionWrapper(rule, output_field=BooleanField())

    rows = (
        HeldBonusTally.objects.filter(connection__study=study, state__in=HELD)
        .exclude(bonuses=0)
        .annotate(
            is_payable=asked(bonuses.payable()),
            is_in_flight=asked(_held_as(FLYING)),
            is_by_the_api=asked(_held_as(HELD_BY_THE_API)),
            is_by_files=asked(_held_as(SENT_IN_A_FILE)),
            is_aside=asked(_held_as(SET_ASIDE)),
            is_confirmable=asked(_confirmable_of_held()),
        )
        .order_by()
        .values("study_session_id", "cause", *SETS)
        .annotate(n=Sum("bonuses"), total=Sum("amount"), hashed=Sum("ids_hash"))
        .order_by("study_session_id", "cause", *SETS)
        .values_list("study_session_id", "cause", "n", "total", "hashed", *SETS)
    )
    return [
        HeldBonuses(session, cause, n, total, int(hashed), *(bool(answer) for answer in sets))
        for session, cause, n, total, hashed, *sets in rows
    ]


def paid_entries(study: Study) -> QuerySet[BonusEntry]:
    """The study's confirmed bonuses: the ledger's paid rows, whichever payer paid them."""
    return BonusEntry.objects.filter(study=study, kind=BonusKind.PAID)


def _figure(held: Iterable[HeldBonuses]) -> dict[str, Any]:
    groups = list(held)
    return {"n": sum(group.bonuses for group in groups), "total": sum((group.amount for group in groups), Decimal("0"))}


def machine_figures(
    study: Study, *, connected: bool | None = None, held: list[HeldBonuses] | None = None
) -> dict[str, dict[str, Any]]:
    """Count and amount of the study's bonuses in each state of the payment machine, by the one
    rule: owed (no payer holds it), in flight (claimed or sent, by the API or a downloaded file),
    set aside, paid (the ledger). A study without a connection has owed and paid only (`connected`:
    whether it has one, when the caller knows). The unpaid and paid money is the ledger's tally's;
    the bonuses a payer holds are read once, summed per session, cause and set (`held`:
    `held_bonuses`, when the caller read them)."""
    if connected is None:
        connected = MarketConnection.objects.filter(study=study).exists()
    tallied = bonuses.tallied_figures(study)
    if not connected:
        return {"owed": tallied["unpaid"], "in_flight": _figure([]), "aside": _figure([]), "paid": tallied["paid"]}
    if held is None:
        held = held_bonuses(study)
    # Owed: the tally's unpaid payable bonuses less the payable ones a payer holds.
    taken = _figure(group for group in held if group.payable)
    return {
        "owed": {"n": tallied["unpaid"]["n"] - taken["n"], "total": tallied["unpaid"]["total"] - taken["total"]},
        "in_flight": _figure(group for group in held if group.in_flight),
        "aside": _figure(group for group in held if group.payable and group.aside),
        "paid": tallied["paid"],
    }


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


# With a connection, a researcher may mark paid by hand what no payer holds, what a downloaded file
# sent and what was set aside, never what the API payer holds.
def _confirmable_when_connected() -> Q:
    return free_of_payers() | _paid_as(SENT_IN_A_FILE) | _paid_as(SET_ASIDE)


def _confirmable_of_held() -> Q:
    """`_confirmable_when_connected` of the held bonuses' tally (which holds no bonus free of payers)."""
    return _held_as(SENT_IN_A_FILE) | _held_as(SET_ASIDE)


def confirmable_groups(study: Study, connected: bool, held: list[HeldBonuses] | None = None) -> list[UnpaidGroup]:
    """`confirmable_by_hand` per worker, session and cause (`quality.bonuses.tallied_groups`): the
    tally's groups less the held payable bonuses no researcher may mark paid (`held`: the study's
    `held_bonuses`, when the caller read them)."""
    if not connected:
        return bonuses.tallied_groups(study)
    if held is None:
        held = held_bonuses(study)
    kept_from_hand = [
        (group.session_id, group.cause, group.bonuses, group.amount, group.ids_hash)
        for group in held
        if group.payable and not group.confirmable
    ]
    return bonuses.tallied_groups(study, less=kept_from_hand)


# How many set-aside bonuses the bonus page names with the market's reason.
ASIDE_NAMED = 20


def bonus_page_money(study: Study) -> dict[str, Any]:
    """The bonus page's money by the one rule: what may be confirmed by hand (owed, sent by a
    downloaded file, or set aside) as rows and as groups, how many bonuses the API payer holds and
    files sent, the first ASIDE_NAMED set aside, and the machine's figures (owed, in flight, set
    aside, paid), the bonuses payers hold read once."""
    connection_id = MarketConnection.objects.filter(study=study).values_list("pk", flat=True).first()
    connected = connection_id is not None
    held = held_bonuses(study) if connected else []
    figures = machine_figures(study, connected=connected, held=held)
    confirmable = {
        "confirmable": confirmable_by_hand(study, connected),
        "confirmable_groups": confirmable_groups(study, connected, held),
    }
    if connection_id is None:
        return {**confirmable, "api": 0, "files": 0, "aside": [], "figures": figures}
    return {
        **confirmable,
        "api": sum(group.bonuses for group in held if group.payable and group.by_the_api),
        "files": sum(group.bonuses for group in held if group.payable and group.by_files),
        # The first few set aside, each with the market's reason; the figures count them all.
        "aside": first_set_aside(connection_id, ASIDE_NAMED),
        "figures": figures,
    }


def first_set_aside(connection_id: int, most: int) -> list[BonusEntry]:
    """The first `most` of `set_aside` of the study of this connection, in the order payers took
    them, each with its payment: read from the connection's set-aside payments in their index's
    order, each bonus by its key, so sized by `most` (and the unpayable ones passed over), not by
    the bonuses set aside. (A payment holds an unpaid earned bonus: the database refuses any other.)"""
    first = (
        BonusPayment.objects.filter(connection_id=connection_id, **SET_ASIDE)
        .filter(bonuses.payable("earned__"))
        .select_related("earned__worker__user")
        .order_by("pk")[:most]
    )
    entries = []
    for payment in first:
        entry = payment.earned
        entry.market_payment = payment
        entries.append(entry)
    return entries


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
    # From the study's payments by their index (a payment holds an unpaid earned bonus: the database
    # refuses any other), each bonus by its key; from the bonuses, a planner with statistics older
    # than them read every bonus of the study.
    refused = (
        BonusPayment.objects.filter(connection__study=study, state=PaymentState.RELEASED, earned__study=study)
        .exclude(last_error="")
        .order_by()
        .values("last_error")
        .annotate(latest=Max("pk"))
        .order_by("-latest")
    )
    return [row["last_error"] for row in refused[:most]]


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
