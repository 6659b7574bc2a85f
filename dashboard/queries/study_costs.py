"""A study's money on its page: what its tasks and bonuses cost, owed, approved and paid, with
held codes' apart (`costs`), and what a participant earns per session and per hour."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import BooleanField, ExpressionWrapper, F, Q, Sum

from crowd.holds import hold_waits
from crowd.models import Study
from crowd.selectors import counted_sessions
from markets import selectors as market_selectors
from quality import bonuses
from quality.models import BonusTally

from .costs import Money, sum_of_amounts


@dataclass
class CauseCost:
    """One cause's bonuses: owed (no payer holds them), approved (sent, not confirmed) and paid."""

    cause: bonuses.CauseWords
    earned: int = 0
    paid: Money = field(default_factory=Money)
    owed: Money = field(default_factory=Money)
    approved: Money = field(default_factory=Money)


@dataclass
class StudyCosts:
    """The study's money as the cost page counts it (dashboard.queries.costs.StudyCost); a bonus
    the market confirmed paid is spent whatever its session's hold (the money was sent)."""

    tasks: int
    task_money: Money
    by_cause: list[CauseCost]
    held_tasks: int = 0
    held_task_money: Money = field(default_factory=Money)
    bonuses_held: Money = field(default_factory=Money)
    # `tasks` split by where their money stands (task_payment_states).
    task_counts: dict[str, int] = field(default_factory=dict)
    task_amounts: dict[str, Money] = field(default_factory=dict)

    @property
    def tasks_running(self) -> int:
        return self.task_counts.get("running", 0)

    @property
    def tasks_complete(self) -> int:
        """Tasks of completed sessions whose money may go: owed, approved or paid."""
        return sum(self.task_counts.get(state, 0) for state in ("owed", "approved", "paid"))

    @property
    def bonuses_paid(self) -> Money:
        return sum((row.paid for row in self.by_cause), Money())

    @property
    def bonuses_owed(self) -> Money:
        return sum((row.owed for row in self.by_cause), Money())

    @property
    def bonuses_approved(self) -> Money:
        return sum((row.approved for row in self.by_cause), Money())

    @property
    def owed(self) -> Money:
        return self.task_amounts.get("owed", Money()) + self.bonuses_owed

    @property
    def approved(self) -> Money:
        return self.task_amounts.get("approved", Money()) + self.bonuses_approved

    @property
    def spent(self) -> Money:
        """Money the market confirmed sent: approved tasks it paid and bonuses it paid."""
        return self.task_amounts.get("paid", Money()) + self.bonuses_paid


def costs(
    of_study: Study,
    tasks: int,
    held_tasks: int = 0,
    task_counts: Mapping[str, int] | None = None,
    *,
    connected: bool,
) -> StudyCosts:
    """Tasks at the study's payment, and the ledger's bonuses by where they stand: the ledger's
    tally by cause and currency, and the bonuses a payer sent and the market has not confirmed,
    from the held bonuses' tally of the study's payments in flight (owed is
    `quality.bonuses.payable`, the one rule of what money may go, less those). `connected`: whether
    the study has a market connection (without one no payer sends anything, and the payments are
    not read)."""
    counted = counted_sessions(of_study)
    unpaid = F("earned_amount") - F("paid_amount")
    # A sum over no row is NULL, which Money reads as nothing.
    rows = (
        BonusTally.objects.filter(study=of_study, study_session__in=counted)
        .values("cause", "currency")
        .annotate(
            earned=Sum("earned_count"),
            paid=Sum("paid_amount"),
            payable=Sum(unpaid, filter=bonuses.payable()),
            held=Sum(unpaid, filter=hold_waits("study_session__")),
        )
        .order_by()
    )
    sent = (
        {}
        if not connected
        else {
            (row["cause"], row["currency"]): row
            for row in market_selectors.in_flight_tally(of_study)
            # Asked of each tally row, not a filter: as a filter, a planner with stale statistics
            # walked the counted sessions' every bonus instead.
            .annotate(counted=ExpressionWrapper(Q(study_session__in=counted), output_field=BooleanField()))
            .values("cause", "currency", "counted")
            .annotate(approved=sum_of_amounts(Q()), payable=sum_of_amounts(bonuses.payable()))
            .order_by()
            if row["counted"]
        }
    )
    by_key: dict[str, CauseCost] = {}
    held = Money()
    for row in rows:
        entry = by_key.setdefault(row["cause"], CauseCost(bonuses.CAUSE_BY_KEY[row["cause"]]))
        entry.earned += row["earned"]
        entry.paid += Money.of(row["paid"], row["currency"])
        approved = sent.get((row["cause"], row["currency"]), {"approved": 0, "payable": 0})
        entry.owed += Money.of((row["payable"] or 0) - approved["payable"], row["currency"])
        entry.approved += Money.of(approved["approved"], row["currency"])
        held += Money.of(row["held"], row["currency"])
    ordered = [by_key[key] for key in bonuses.CAUSE_BY_KEY if key in by_key]
    return StudyCosts(
        tasks,
        Money.of(tasks * of_study.payment_per_task, of_study.bonus_currency),
        ordered,
        held_tasks=held_tasks,
        held_task_money=Money.of(held_tasks * of_study.payment_per_task, of_study.bonus_currency),
        bonuses_held=held,
        task_counts=dict(task_counts or {}),
        task_amounts={
            state: Money.of(count * of_study.payment_per_task, of_study.bonus_currency)
            for state, count in (task_counts or {}).items()
        },
    )


def payment_per_session(of_study: Study) -> Decimal:
    """What a participant is paid for a completed session: the tasks before the code at the payment per task."""
    return of_study.payment_per_task * of_study.tasks_per_batch


def hourly(amount: Decimal, seconds: float | None) -> Decimal | None:
    if not seconds:
        return None
    return (amount * Decimal(3600) / Decimal(str(seconds))).quantize(Decimal("0.01"))
