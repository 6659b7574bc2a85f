"""Unpaid bonuses as the bonus page reads them, sized by what it shows, never by the ledger:

- `unpaid_lines`: one page's bonuses as plain rows (the columns the page shows, named as a
  `BonusEntry`'s), in one statement; `LinesPage` hands a paginator those rows a page at a time,
  the page's bonuses found on the bonus rows before their workers, users and pairs are joined;
  `EntriesPage` hands it bonuses as models (the held ones), counted already.
- `UnpaidGroup`: a worker's bonuses of one session and cause, summed, with the columns the
  market-file rules (`quality.bonuses.file_of`) read and a hash of the group's ids
  (`quality.bonuses.unpaid_groups` sums a study's bonuses so; `quality.bonuses.tallied_groups` reads
  the ledger's tally); the page's summaries are made of these.
- `listed_bonuses`: how many bonuses the groups hold, their sum, and a fingerprint of their ids;
  the pay form carries the fingerprint instead of every id, and the server pays the list only
  while its fingerprint is unchanged (`markets.hand_payments.mark_listed_paid_by_hand`).
"""

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import overload

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
    """An unpaid bonus as the bonus page lists it; `marks` are the page's own."""

    pk: int
    worker_id: int
    worker: WorkerLine
    study_session: SessionLine
    pair: PairLine
    amount: Decimal
    currency: str
    cause: str
    created_at: datetime
    marks: list[str] = field(default_factory=list)


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
    "cause",
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
            *amount_currency_cause_created_at,
        )
        for pk, worker_id, external_id, username, market, session_id, pair_id, *amount_currency_cause_created_at in (
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
            return self._lines(index)
        return self._lines(slice(index, index + 1))[0]

    def _lines(self, place: slice) -> list[UnpaidLine]:
        # The page's ids from the bonus rows and their filters alone; the columns shown, for those.
        page = self.entries.values("pk")[place]
        return unpaid_lines(BonusEntry.objects.filter(pk__in=page).order_by(*self.entries.query.order_by))


class EntriesPage(Sequence[BonusEntry]):
    """The bonuses of `entries` (`count` of them, counted already: from the ledger's tally, say) as
    a paginator reads them: its page's slice read in one statement, with the entries' prefetches."""

    def __init__(self, entries: QuerySet[BonusEntry], count: int) -> None:
        self.entries, self.total = entries, count

    def __len__(self) -> int:
        return self.total

    @overload
    def __getitem__(self, index: int) -> BonusEntry: ...

    @overload
    def __getitem__(self, index: slice) -> list[BonusEntry]: ...

    def __getitem__(self, index: int | slice) -> BonusEntry | list[BonusEntry]:
        if isinstance(index, slice):
            return list(self.entries[index])
        return self.entries[index]


@dataclass(frozen=True)
class UnpaidGroup:
    """A worker's unpaid bonuses of one session and one cause (`quality.bonuses.CAUSES`' key): how
    many, their sum and `ids_hash` of their ids, with the columns the market-file rules read, named
    as a bonus's."""

    worker_id: int
    worker: WorkerLine
    session_id: int
    study_session: SessionLine
    cause_key: str
    bonuses: int
    amount: Decimal
    ids_hash: str


def id_hash(pk: int) -> int:
    """An id's hash: the first 60 bits of the MD5 of its decimal digits (the ledger's tally computes
    the same in SQL, `quality.models.BonusTally`)."""
    return int(hashlib.md5(str(pk).encode()).hexdigest()[:15], 16)


def ids_hash(ids: Iterable[int]) -> str:
    """The sum of these ids' hashes, in decimal digits: a set's hash that a tally can keep, adding an
    id's hash when a bonus is earned and taking it away when it is paid. Two different sets of ids
    have the same sum only by a coincidence of 60-bit hashes."""
    return str(sum(id_hash(pk) for pk in ids))


@dataclass(frozen=True)
class ListedBonuses:
    """A list of bonuses as the pay form names it: how many, their sum, and `fingerprint`, the MD5
    of its groups' keys and ids' hashes in order (that of no group for an empty list)."""

    count: int
    amount: Decimal
    fingerprint: str


def listed_bonuses(groups: Iterable[UnpaidGroup]) -> ListedBonuses:
    """The bonuses of `groups` counted, summed and fingerprinted: one bonus more or less in any
    group changes the fingerprint."""
    kept = list(groups)
    return ListedBonuses(
        sum(group.bonuses for group in kept),
        sum((group.amount for group in kept), Decimal(0)),
        fingerprint((group.session_id, group.cause_key, group.ids_hash) for group in kept),
    )


def listed_rows(rows: Iterable[tuple[int, int, str, Decimal]]) -> ListedBonuses:
    """`listed_bonuses` of bonuses read one by one, as (id, session id, cause key, amount): the same
    count, sum and fingerprint as of their groups."""
    by_group: dict[tuple[int, str], list[int]] = {}
    amount = Decimal(0)
    for pk, session_id, cause_key, each in rows:
        by_group.setdefault((session_id, cause_key), []).append(pk)
        amount += each
    return ListedBonuses(
        sum(len(ids) for ids in by_group.values()),
        amount,
        fingerprint((session_id, cause_key, ids_hash(ids)) for (session_id, cause_key), ids in by_group.items()),
    )


def fingerprint(groups: Iterable[tuple[int, str, str]]) -> str:
    """The MD5 of the groups (session id, cause key, their ids' hash), one line each, in order."""
    return hashlib.md5(
        "\n".join(f"{session} {cause} {ids}" for session, cause, ids in sorted(groups)).encode()
    ).hexdigest()
