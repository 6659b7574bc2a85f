"""Unpaid bonuses as plain rows: the bonus page's pay form lists every unpaid bonus of a study
(hundreds), and building each as a `BonusEntry` with its worker, user, session and pair cost most
of the page. `unpaid_lines` reads the columns the page and the market-file rules
(`quality.bonuses.file_of`, `market_accounts`, `unpaid_by_cause`) use, in one statement, as rows
with the same attribute names, so those rules read a line as they read an entry.
"""

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from corpus.models import Worker

from .models import BonusEntry


@dataclass(frozen=True)
class WorkerLine:
    """The columns of a bonus's worker the page and the file rules read; named as `Worker` is."""

    pk: int
    external_id: str
    username: str
    market: str

    def __str__(self) -> str:
        return Worker.named(self.external_id, self.username)


@dataclass(frozen=True)
class SessionLine:
    external_session_id: str  # "" for a bonus outside any session, as the page shows it


@dataclass(frozen=True)
class PairLine:
    pair_id: str  # "" for a bonus of no pair


@dataclass
class UnpaidLine:
    """An unpaid bonus as the bonus page lists it; `marks` and `cause` are the page's own."""

    pk: int
    worker_id: int
    worker: WorkerLine
    study_session: SessionLine
    pair: PairLine
    amount: Decimal
    currency: str
    reason: str
    created_at: datetime
    marks: list[str] = field(default_factory=list)
    cause: Any = None


COLUMNS = (
    "pk",
    "worker_id",
    "worker__external_id",
    "worker__user__username",
    "worker__market",
    "study_session__external_session_id",
    "pair__pair_id",
    "amount",
    "currency",
    "reason",
    "created_at",
)


def unpaid_lines(entries: QuerySet[BonusEntry]) -> list[UnpaidLine]:
    """These bonuses (in their order) as plain rows, read in one statement."""
    return [
        UnpaidLine(
            pk,
            worker_id,
            WorkerLine(worker_id, external_id, username, market),
            SessionLine(session_id or ""),
            PairLine(pair_id or ""),
            *amount_currency_reason_created_at,
        )
        for pk, worker_id, external_id, username, market, session_id, pair_id, *amount_currency_reason_created_at in (
            entries.values_list(*COLUMNS)
        )
    ]
