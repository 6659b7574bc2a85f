"""Unpaid bonuses as the bonus page reads them, sized by what it shows, never by the ledger:

- `unpaid_lines`: one page's bonuses as plain rows (the columns the page and the market-file rules,
  `quality.bonuses.file_of`, read, named as a `BonusEntry`'s), in one statement; `LinesPage` hands
  a paginator those rows a page at a time.
- `UnpaidGroup`: a worker's bonuses of one session and cause, summed, with the columns the file
  rules read (`quality.bonuses.unpaid_groups`); the page's summaries are made of these.
- `listed_bonuses`: how many bonuses a list holds, their sum, and a fingerprint of their ids, in
  one statement; the pay form carries the fingerprint instead of every id, and the server pays the
  list only while its fingerprint is unchanged (`markets.hand_payments.mark_listed_paid_by_hand`).
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, overload

from django.contrib.postgres.aggregates import StringAgg
from django.db.models import Count, QuerySet, Sum, TextField, Value
from django.db.models.functions import MD5, Cast, Coalesce

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


class LinesPage(Sequence[UnpaidLine]):
    """The bonuses of `entries` (`count` of them, counted already) as a paginator reads them: its
    page's slice read in one statement, as plain rows."""

    def __init__(self, entries: QuerySet[BonusEntry], count: int) -> None:
        self.entries, self.total = entries, count

    def __len__(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> UnpaidLine: ...

    @overload
    def __getitem__(self, index: slice) -> list[UnpaidLine]: ...

    def __getitem__(self, index: int | slice) -> UnpaidLine | list[UnpaidLine]:
        if isinstance(index, slice):
            return unpaid_lines(self.entries[index])
        return unpaid_lines(self.entries[index : index + 1])[0]


@dataclass(frozen=True)
class UnpaidGroup:
    """A worker's unpaid bonuses of one session and one cause (`quality.bonuses.CAUSES`' key): how
    many and their sum, with the columns the market-file rules read, named as a bonus's."""

    worker_id: int
    worker: WorkerLine
    study_session: SessionLine
    cause_key: str
    bonuses: int
    amount: Decimal


@dataclass(frozen=True)
class ListedBonuses:
    """A list of bonuses as the pay form names it: how many, their sum, and `fingerprint`, the MD5
    of their ids in order (that of no bonus for an empty list)."""

    count: int
    amount: Decimal
    fingerprint: str


def listed_bonuses(entries: QuerySet[BonusEntry]) -> ListedBonuses:
    """`entries` counted, summed and fingerprinted in one statement, whatever their number."""
    found = entries.order_by().aggregate(
        count=Count("pk"),
        amount=Coalesce(Sum("amount"), Decimal(0)),
        fingerprint=MD5(
            Coalesce(StringAgg(Cast("pk", TextField()), ",", order_by="pk"), Value(""), output_field=TextField())
        ),
    )
    return ListedBonuses(found["count"], found["amount"], found["fingerprint"])
