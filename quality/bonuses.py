"""The bonus ledger: recording earned bonuses, paying them, and the lists the markets accept
(docs/quality.md, "Catch trials and bonuses").

The ledger (`BonusEntry`) is append-only: a bonus is one `earned` row, written in the transaction
that scored it; paying it adds one `paid` row that names it (`pays`, unique), so a bonus is never
counted twice (unique worker + catch item + study session) nor paid twice. Its cause is a column the
writer sets (`BonusCause`); the reason is the words a worker reads.

Money follows holds: `payable` is the one rule the files, the bonus page and the market payer ask
(a held session's bonuses wait, a refused one's and an open-link study's are never paid). Exports
list a study's unpaid, payable earned rows: Prolific's bulk-bonus lines, MTurk's per-assignment
lines, and who is in neither and why (`market_accounts`): every unpaid bonus is in exactly one.
"""

import dataclasses
import io
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, overload

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count, DecimalField, F, Func, Lookup, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from audit import services as audit
from base import spreadsheet_safe
from base.compiled import compiled_once
from corpus.models import Market, Pair, Worker
from crowd.holds import OPEN_LINK_NO_BONUS, bonus_may_go, hold_refused, hold_waits
from crowd.models import Study, StudySession

from .bonus_lines import EntriesPage, SessionLine, UnpaidGroup, WorkerLine, ids_hash
from .flags import WorkerFlag
from .models import BonusCause, BonusEntry, BonusKind, BonusTally
from .selectors import catch_figures, guesser_evidence_by_worker
from .sequential import catch_only_flag

CENT = Decimal("0.01")

# --- what a bonus is for --------------------------------------------------------------------------

CATCH_TRIAL_REASON = "Catch trial matched"
FOOLED_MODEL_REASON = "Verified example that fooled the model"
# A paid row's reason is its earned row's, after this.
PAID_PREFIX = "Paid: "


@dataclass(frozen=True)
class CauseWords:
    """How the pages and the MTurk file word a bonus's cause (`BonusEntry.cause`)."""

    key: str
    one: str
    many: str

    def count(self, n: int) -> str:
        return f"{n} {self.one if n == 1 else self.many}"


CAUSES = (
    CauseWords(
        BonusCause.CATCH_TRIAL.value, BonusCause.CATCH_TRIAL.label, "catch trials answered as the researchers did"
    ),
    CauseWords(BonusCause.FOOLED_MODEL.value, BonusCause.FOOLED_MODEL.label, "verified examples that fooled the model"),
    CauseWords(BonusCause.OTHER.value, BonusCause.OTHER.label, "other bonuses"),
)
CAUSE_BY_KEY = {cause.key: cause for cause in CAUSES}


def describe_causes(counts: dict[str, int]) -> str:
    """'3 catch trials answered as the researchers did and 1 verified example that fooled the model'."""
    parts = [
        CAUSE_BY_KEY[key].count(n)
        for key, n in sorted(counts.items(), key=lambda item: list(CAUSE_BY_KEY).index(item[0]))
        if n
    ]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


class PaymentRefused(ValueError):
    """Marking bonuses paid was refused; the message is fit to show the researcher."""


def money(amount: Decimal | int | str) -> str:
    return f"{Decimal(amount).quantize(CENT)}"


def record_catch_bonuses(
    worker: Worker, study_session: StudySession | None, matched_answers: Sequence[Any]
) -> list[BonusEntry]:
    """One `earned` row per matched catch trial, at the study's bonus, in the caller's transaction."""
    if study_session is None or not matched_answers:
        return []
    study = study_session.study
    if study.bonus_per_catch_match is None or study.bonus_per_catch_match <= 0:
        return []
    return BonusEntry.objects.bulk_create(
        [
            BonusEntry(
                kind=BonusKind.EARNED,
                worker=worker,
                study=study,
                study_session=study_session,
                pair_id=answer.pair_id,
                amount=study.bonus_per_catch_match,
                currency=study.bonus_currency,
                cause=BonusCause.CATCH_TRIAL,
                reason=with_open_link_note(study, f"{CATCH_TRIAL_REASON} in study {study.slug}"),
            )
            for answer in matched_answers
        ]
    )


def payable(prefix: str = "") -> Q:
    """Which ledger rows' money may be paid, as a filter (`prefix` reaches the rows through a
    relation, e.g. "bonus_entries__"): a bonus outside any study session, or one whose session's code
    is not held or was released, on a study whose ids are verified (crowd.holds.bonus_may_go). The
    one rule of every payer: the market files, "mark paid" and markets.payments._claim_owed."""
    return Q(**{f"{prefix}study_session__isnull": True}) | bonus_may_go(f"{prefix}study_session__")


def with_open_link_note(study: Study, reason: str) -> str:
    """A bonus's reason, with why it is never paid where the study's link is open, cut to the
    ledger's 200 characters (the reason's own words first)."""
    if not study.open_link_unverified:
        return reason[:200]
    note = f" ({OPEN_LINK_NO_BONUS})"
    return reason[: 200 - len(note)] + note


def not_payable_open_link(study: Study) -> QuerySet[BonusEntry]:
    """The study's unpaid bonuses that are never paid because its link is open (ids unverified)."""
    return _earned_unpaid(study).filter(study_session__study__open_link_unverified=True)


def _unpaid_rows() -> QuerySet[BonusEntry]:
    return (
        BonusEntry.objects.filter(kind=BonusKind.EARNED, payment__isnull=True)
        .select_related("worker__user", "study_session", "pair")
        .order_by("created_at", "id")
    )


def _earned_unpaid(study: Study) -> QuerySet[BonusEntry]:
    return _unpaid_rows().filter(study=study)


def unpaid(study: Study) -> QuerySet[BonusEntry]:
    """The study's earned bonuses without a payment that may be paid now (`payable`), oldest first."""
    return _earned_unpaid(study).filter(payable())


def unpaid_by_key(named: Lookup[Any]) -> QuerySet[BonusEntry]:
    """`unpaid`'s rule for the bonuses `named` names by their key (a study's payer's, say:
    `markets.selectors`), each found by its key alone. With the study's condition beside it, a
    planner whose statistics predate the study's bonuses walked every one of them instead."""
    return _unpaid_rows().filter(named).filter(payable())


def held_back(study: Study) -> QuerySet[BonusEntry]:
    """The study's unpaid bonuses whose session's code is held and not decided: they wait."""
    return _earned_unpaid(study).filter(hold_waits("study_session__")).prefetch_related("study_session__code_holds")


def held_back_page(study: Study, held_count: int) -> EntriesPage:
    """`held_back`, `held_count` of them (the ledger's tally's count), as a paginator reads them: no
    read at all when none waits."""
    return EntriesPage(held_back(study), held_count)


def refused_with_hold(study: Study) -> QuerySet[BonusEntry]:
    """The study's unpaid bonuses whose session's held code was refused: never paid."""
    return _earned_unpaid(study).filter(hold_refused("study_session__"))


def mark_paid(
    study: Study, earned_ids: Iterable[int | str], by: User | None = None, *, confirmed_by_market: bool = False
) -> dict[str, Any]:
    """Record these earned bonuses of the study as paid: one `paid` row each, all in one transaction.

    Refused as a whole (nothing written) when an id is not an earned bonus of this study, or is not
    `payable` (its session's code is held, or the hold was refused); ids already paid (another
    researcher was quicker) are skipped and counted. `confirmed_by_market`: the market confirmed it
    paid them, so the ledger records what happened even if a hold came after the money was sent.
    Returns {"paid": n, "already_paid": m, "amount": total paid now}.
    """
    ids = sorted({int(pk) for pk in earned_ids})
    if not ids:
        raise PaymentRefused("Choose at least one bonus to mark as paid.")
    with transaction.atomic():
        # Lock the earned rows (pk order, as every payer does) so two payers cannot both pay one.
        earned = list(
            BonusEntry.objects.select_for_update().filter(pk__in=ids, study=study, kind=BonusKind.EARNED).order_by("pk")
        )
        if len(earned) != len(ids):
            raise PaymentRefused("Some of these are not earned bonuses of this study; nothing was marked paid.")
        if not confirmed_by_market:
            if study.open_link_unverified:
                raise PaymentRefused(
                    "This study's link is open (its participant ids are unverified), so its bonuses are never paid: "
                    "nothing was marked paid."
                )
            waiting = len(ids) - BonusEntry.objects.filter(pk__in=ids).filter(payable()).count()
            if waiting:
                raise PaymentRefused(
                    f"{waiting} of these bonus(es) belong to sessions whose completion code is held or was refused: "
                    "nothing was marked paid. Release the hold first (admin: study sessions)."
                )
        already = set(BonusEntry.objects.filter(pays__in=ids).values_list("pays_id", flat=True))
        payments = [
            BonusEntry(
                kind=BonusKind.PAID,
                worker_id=row.worker_id,
                study=study,
                study_session_id=row.study_session_id,
                pair_id=row.pair_id,
                amount=row.amount,
                currency=row.currency,
                cause=row.cause,
                reason=f"{PAID_PREFIX}{row.reason}"[:200],
                pays=row,
                recorded_by=by,
            )
            for row in earned
            if row.pk not in already
        ]
        BonusEntry.objects.bulk_create(payments)
        amount = sum((row.amount for row in payments), Decimal("0"))
        if payments:
            audit.record(
                "payment.confirmed_by_market" if confirmed_by_market else "payment.marked_paid",
                actor=by,
                subject=study,
                team_id=study.team_id,
                after={
                    "bonuses": [row.pays_id for row in payments],
                    "amount": amount,
                    "currency": study.bonus_currency,
                },
            )
        return {"paid": len(payments), "already_paid": len(already), "amount": amount}


# --- reads -------------------------------------------------------------------------------------


def _zero() -> Value:
    return Value(Decimal("0"), output_field=DecimalField(max_digits=12, decimal_places=2))


@dataclass(frozen=True)
class CatchStanding:
    """A worker's catch-trial answers (of a study): seen, matched, and the catch-only flag judged
    from them beside the worker's ordinary labels (`sequential.catch_only_flag`)."""

    seen: int = 0
    matched: int = 0
    catch_only: WorkerFlag | None = None


def catch_standings(study: Study | None = None) -> dict[int, CatchStanding]:
    """Per worker with catch-trial answers (of the study): their `CatchStanding`. Reads every catch
    answer and the workers' ordinary labels' evidence, so it grows with the crowd and moves slowly:
    the bonus page keeps it in the dashboard's figure cache. A worker without catch answers has
    none to be flagged for (`catch_only_flag` wants some seen)."""
    seen_rows = catch_figures(study=study)
    # Catch accuracy is judged beside the ordinary labels: a worker right on the catch
    # trials and at chance elsewhere is marked and listed last, never ranked first.
    evidence = guesser_evidence_by_worker(seen_rows, catch_trials=False)
    return {
        pk: CatchStanding(seen, matched, catch_only_flag(pk, seen, matched, evidence[pk]))
        for pk, (seen, matched) in seen_rows.items()
    }


def worker_money(study: Study | None = None) -> dict[int, Mapping[str, Any]]:
    """{worker id: {"worker_id", "earned", "paid", "held", "refused"}} of the study (of every study
    without one), from the ledger's tally in one grouped statement: held is unpaid and waiting for a
    held code's decision, refused unpaid with a refused code."""
    return {row["worker_id"]: row for row in _money_per_worker(study)}


def _tally_of(study: Study | None) -> QuerySet[BonusTally]:
    return BonusTally.objects.all() if study is None else BonusTally.objects.filter(study=study)


def _money_per_worker(study: Study | None) -> QuerySet[Any, Any]:
    unpaid = F("earned_amount") - F("paid_amount")
    return (
        _tally_of(study)
        .values("worker_id")
        .annotate(
            earned=Sum("earned_amount"),
            paid=Sum("paid_amount"),
            held=Coalesce(Sum(unpaid, filter=hold_waits("study_session__")), _zero()),
            refused=Coalesce(Sum(unpaid, filter=hold_refused("study_session__")), _zero()),
        )
        .order_by()
    )


def worker_totals(
    study: Study | None = None, standings: Mapping[int, CatchStanding] | None = None
) -> list[dict[str, Any]]:
    """Per worker: catch trials seen and matched, accuracy, bonus earned, paid, held, refused and
    unpaid, in `WorkerTotals`' order. The money is read now, from the ledger's tally; the catch
    figures are `standings` where the caller kept them (`catch_standings`), else read now too."""
    if standings is None:
        standings = catch_standings(study)
    return WorkerTotals(study, standings)[:]


class WorkerTotals(Sequence[dict[str, Any]]):
    """`worker_totals`' rows as a paginator reads them: the workers of the study's tally and of
    `standings` counted in one statement, and a page's rows ordered, cut and joined to their
    workers in another, so a page of 25 reads 25 workers whatever the crowd. The order: workers
    flagged catch-only last (right on the catch trials, at chance elsewhere: never ranked first),
    then the most unpaid first, then by name as the pages write it (code point order) and id."""

    def __init__(self, study: Study | None, standings: Mapping[int, CatchStanding]) -> None:
        self.standings = standings
        grouped = _money_per_worker(study).values_list("worker_id", "earned", "paid", "held", "refused")
        self._money = grouped.query.sql_with_params()
        # Counted without the money: the same workers, from the tally's rows of the study.
        self._tallied = _tally_of(study).values_list("worker_id").query.sql_with_params()
        self._total: int | None = None

    def __len__(self) -> int:
        if self._total is None:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"{self._workers_sql('worker_id', self._tallied)} SELECT count(*) FROM shown",
                    self._params(self._tallied),
                )
                self._total = cursor.fetchone()[0]
        return self._total

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, int):
            found = self._rows(index + len(self) if index < 0 else index, 1) if -len(self) <= index else []
            if not found:
                raise IndexError(index)
            return found[0]
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise ValueError("worker totals are read a page at a time")
        return self._rows(start, max(stop - start, 0))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self[:])

    @staticmethod
    def _workers_sql(columns: str, tallied: tuple[str, tuple[Any, ...]]) -> str:
        """`money` (the tally's rows of the study as `columns`) and `shown`: the workers in it or
        in the standings, joined to their names."""
        return (
            f"WITH money ({columns}) AS ({tallied[0]}), "
            "shown AS (SELECT w.id, w.external_id, u.username, w.market FROM "
            "(SELECT worker_id FROM money UNION SELECT unnest(%s::integer[])) AS ids "
            f"JOIN {Worker._meta.db_table} w ON w.id = ids.worker_id JOIN {User._meta.db_table} u ON u.id = w.user_id)"
        )

    def _params(self, tallied: tuple[str, tuple[Any, ...]], *more: Any) -> tuple[Any, ...]:
        return (*tallied[1], list(self.standings), *more)

    def _rows(self, offset: int, limit: int) -> list[dict[str, Any]]:
        flagged = [pk for pk, standing in self.standings.items() if standing.catch_only is not None]
        zero = "0::numeric"
        unpaid = (
            f"coalesce(m.earned, {zero}) - coalesce(m.paid, {zero}) - coalesce(m.held, {zero}) "
            f"- coalesce(m.refused, {zero})"
        )
        workers = self._workers_sql("worker_id, earned, paid, held, refused", self._money)
        with connection.cursor() as cursor:
            cursor.execute(
                f"{workers} SELECT s.id, s.external_id, s.username, s.market, m.earned, m.paid, m.held, m.refused "
                "FROM shown s LEFT JOIN money m ON m.worker_id = s.id "
                f"ORDER BY s.id = ANY(%s::integer[]), {unpaid} DESC, "
                "coalesce(nullif(s.external_id, ''), s.username) COLLATE \"C\", s.id LIMIT %s OFFSET %s",
                self._params(self._money, flagged, limit, offset),
            )
            found = cursor.fetchall()
        rows: list[dict[str, Any]] = []
        for pk, external_id, username, market, *money in found:
            standing = self.standings.get(pk, CatchStanding())
            seen, matched = standing.seen, standing.matched
            earned, paid, held, refused = (Decimal(amount or 0).quantize(CENT) for amount in money)
            rows.append(
                {
                    "id": pk,
                    "name": Worker.named(external_id, username),
                    "market": market,
                    "catch_seen": seen,
                    "catch_matched": matched,
                    "catch_accuracy": matched / seen if seen else None,
                    "earned": earned,
                    "paid": paid,
                    "held": held,
                    "refused": refused,
                    "unpaid": earned - paid - held - refused,
                    "catch_only": standing.catch_only,
                }
            )
        return rows


def tallied_figures(study: Study) -> dict[str, dict[str, Any]]:
    """The study's unpaid payable bonuses (`unpaid`) and paid ones, as {"unpaid": {"n", "total"},
    "paid": {"n", "total"}}, from the ledger's tally in one statement."""
    unpaid_group = Q(earned_count__gt=F("paid_count")) & payable()
    row = BonusTally.objects.filter(study=study).aggregate(
        unpaid_n=Coalesce(Sum(F("earned_count") - F("paid_count"), filter=unpaid_group), 0),
        unpaid_total=Coalesce(Sum(F("earned_amount") - F("paid_amount"), filter=unpaid_group), _zero()),
        paid_n=Coalesce(Sum("paid_count"), 0),
        paid_total=Coalesce(Sum("paid_amount"), _zero()),
    )
    return {
        "unpaid": {"n": row["unpaid_n"], "total": row["unpaid_total"]},
        "paid": {"n": row["paid_n"], "total": row["paid_total"]},
    }


def study_summaries() -> list[Study]:
    """Per study with any bonus: unpaid (payable) count and amount, held back (a held code waits)
    count and amount, earned and paid totals (one query)."""
    # The statement takes no argument: built and compiled once per process (base.compiled).
    sql, params = compiled_once("quality.bonuses.study_summaries", _study_summaries_queryset)
    return list(Study.objects.raw(sql, params))


def _study_summaries_queryset() -> QuerySet[Study]:
    # From the ledger's tally: a row per session and cause, not one per bonus.
    owed = Q(bonus_tallies__earned_count__gt=F("bonus_tallies__paid_count")) & payable("bonus_tallies__")
    waits = hold_waits("bonus_tallies__study_session__")
    unpaid_count = F("bonus_tallies__earned_count") - F("bonus_tallies__paid_count")
    unpaid_amount = F("bonus_tallies__earned_amount") - F("bonus_tallies__paid_amount")
    unpaid_now = Q(bonus_tallies__earned_count__gt=F("bonus_tallies__paid_count"))
    return (
        Study.objects.filter(bonus_tallies__isnull=False)
        .distinct()
        .annotate(
            unpaid_count=Coalesce(Sum(unpaid_count, filter=owed), 0),
            unpaid_amount=Coalesce(Sum(unpaid_amount, filter=owed), _zero()),
            held_count=Coalesce(Sum(unpaid_count, filter=waits), 0),
            held_amount=Coalesce(Sum(unpaid_amount, filter=waits), _zero()),
            held_sessions=Count("bonus_tallies__study_session", filter=waits & unpaid_now, distinct=True),
            earned_amount=Coalesce(Sum("bonus_tallies__earned_amount"), _zero()),
            paid_amount=Coalesce(Sum("bonus_tallies__paid_amount"), _zero()),
        )
        .order_by("slug")
    )


# --- the markets' lists ------------------------------------------------------------------------


def _prolific_key(entry: BonusEntry | UnpaidGroup) -> str | None:
    """The Prolific file's line an unpaid bonus goes on (its participant id), or None."""
    return entry.worker.external_id if entry.worker.market == Market.PROLIFIC and entry.worker.external_id else None


def _mturk_key(entry: BonusEntry | UnpaidGroup) -> tuple[str, str] | None:
    """The MTurk file's line an unpaid bonus goes on (worker and assignment id), or None."""
    if entry.worker.market == Market.MTURK and entry.worker.external_id and entry.study_session.external_session_id:
        return (entry.worker.external_id, entry.study_session.external_session_id)
    return None


PAYMENT_FILES = ("prolific", "mturk", "left-out")


def file_of(entry: BonusEntry | UnpaidGroup) -> str:
    """The payment file that lists an unpaid bonus: "prolific", "mturk", or "left-out" (in neither)."""
    return "prolific" if _prolific_key(entry) is not None else "mturk" if _mturk_key(entry) is not None else "left-out"


def left_out_because(entry: BonusEntry | UnpaidGroup) -> str:
    """Why an unpaid bonus is in neither market's file (for entries both keys refuse)."""
    worker = entry.worker
    if worker.market == Market.PROLIFIC:
        return "Prolific worker without a participant id (PROLIFIC_PID): pay by hand on Prolific"
    if worker.market == Market.MTURK:
        if not worker.external_id:
            return "MTurk worker without a worker id: pay by hand on MTurk"
        return "no assignment id on the session (MTurk pays a bonus per assignment): pay by hand on MTurk"
    return "an account on this site, not a market's participant: no market file can pay it"


def prolific_bulk_bonus_csv(entries: Iterable[BonusEntry]) -> str:
    """Prolific's bulk-bonus list: `participant_id,amount` per Prolific participant, no header."""
    totals: dict[str, Decimal] = {}
    for entry in entries:
        key = _prolific_key(entry)
        if key is not None:
            totals[key] = totals.get(key, Decimal("0")) + entry.amount
    return "".join(f"{participant},{money(amount)}\n" for participant, amount in sorted(totals.items()))


def mturk_bonus_csv(entries: Iterable[BonusEntry]) -> str:
    """`worker_id,assignment_id,amount,reason` per MTurk worker and assignment, with that header;
    the reason names what each bonus was for (catch trials, fooled examples)."""
    totals: dict[tuple[str, str], Decimal] = {}
    causes: dict[tuple[str, str], dict[str, int]] = {}
    for entry in entries:
        key = _mturk_key(entry)
        if key is not None:
            totals[key] = totals.get(key, Decimal("0")) + entry.amount
            counts = causes.setdefault(key, {})
            counts[entry.cause] = counts.get(entry.cause, 0) + 1
    out = io.StringIO()
    writer = spreadsheet_safe.writer(out, lineterminator="\n")
    writer.writerow(["worker_id", "assignment_id", "amount", "reason"])
    for key, amount in sorted(totals.items()):
        writer.writerow([*key, money(amount), f"Bonus for {describe_causes(causes[key])}"])
    return out.getvalue()


@dataclass
class MarketAccount:
    """One file's share of a study's unpaid bonuses: its workers, bonuses and amount."""

    name: str
    workers: set[int] = field(default_factory=set)
    bonuses: int = 0
    amount: Decimal = Decimal("0")

    def add(self, group: UnpaidGroup) -> None:
        self.workers.add(group.worker_id)
        self.bonuses += group.bonuses
        self.amount += group.amount


class IdHash(Func):
    """`quality.bonus_lines.id_hash` of an id, in SQL (the ledger's tally's triggers compute the same)."""

    template = "('x' || left(md5((%(expressions)s)::text), 15))::bit(60)::bigint::numeric"
    output_field = DecimalField(max_digits=40, decimal_places=0)


def unpaid_groups(entries: QuerySet[BonusEntry]) -> list[UnpaidGroup]:
    """`entries` summed per worker, session and cause, with the columns the file rules read, in one
    statement: as many rows as the bonuses' workers' sessions, whatever the number of bonuses (it
    reads every bonus of `entries`, where `tallied_groups` reads the ledger's tally)."""
    grouped = (
        entries.order_by()
        .values("worker_id", "study_session_id", "cause")
        .annotate(bonuses=Count("pk"), amount=Sum("amount"), ids_hash=Sum(IdHash("pk")))
        .values_list("worker_id", "study_session_id", "cause", "bonuses", "amount", "ids_hash")
    )
    return _with_their_lines(grouped)


def tallied_groups(
    study: Study, *, less: Iterable[tuple[int | None, str, int, Decimal, int]] = ()
) -> list[UnpaidGroup]:
    """The study's unpaid, payable bonuses (`unpaid`) per worker, session and cause, read from the
    ledger's tally: one row per group, whatever the number of bonuses. `less`: bonuses of that set
    to leave out (those a payer holds, say), as (session id, cause, how many, their sum, their ids'
    hash), taken from their groups' counts, sums and hashes; a group left empty is dropped."""
    tallies = (
        BonusTally.objects.filter(study=study, earned_count__gt=F("paid_count"))
        .filter(payable())
        .order_by()
        # Summed across currencies, as a study's rows are (the tally keeps each currency apart).
        .values("worker_id", "study_session_id", "cause")
        .annotate(
            bonuses=Sum(F("earned_count") - F("paid_count")),
            amount=Sum(F("earned_amount") - F("paid_amount")),
            ids_hash=Sum("unpaid_ids_hash"),
        )
        .values_list("worker_id", "study_session_id", "cause", "bonuses", "amount", "ids_hash")
    )
    groups = _with_their_lines(tallies)
    taken: dict[tuple[int | None, str], tuple[int, Decimal, int]] = {}
    for session_id, cause, count, amount, hashed in less:
        n, total, hashes = taken.get((session_id, cause), (0, Decimal(0), 0))
        taken[(session_id, cause)] = (n + count, total + amount, hashes + hashed)
    if not taken:
        return groups
    kept = []
    for group in groups:
        gone = taken.get((group.session_id, group.cause_key))
        if gone is None:
            kept.append(group)
        elif gone[0] < group.bonuses:
            kept.append(
                dataclasses.replace(
                    group,
                    bonuses=group.bonuses - gone[0],
                    amount=group.amount - gone[1],
                    ids_hash=str(int(group.ids_hash) - gone[2]),
                )
            )
    return kept


def _with_their_lines(grouped: QuerySet[Any, Any]) -> list[UnpaidGroup]:
    """Groups read as (worker id, session id, cause, bonuses, amount, ids' hash), each joined to its
    worker's and session's columns in the same statement, ordered by worker, session and cause."""
    sql, params = grouped.query.sql_with_params()
    # The groups first, then each joined to its worker's and session's columns: the joins are once
    # a group, not once a bonus.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.worker_id, w.external_id, u.username, w.market, g.session_id, s.external_session_id, "
            "g.cause, g.bonuses, g.amount, g.ids_hash "
            f"FROM ({sql}) AS g (worker_id, session_id, cause, bonuses, amount, ids_hash) "
            f"JOIN {Worker._meta.db_table} w ON w.id = g.worker_id "
            f"JOIN {User._meta.db_table} u ON u.id = w.user_id "
            f"JOIN {StudySession._meta.db_table} s ON s.id = g.session_id "
            "ORDER BY g.worker_id, g.session_id, g.cause",
            params,
        )
        rows = cursor.fetchall()
    return [
        UnpaidGroup(
            worker_id,
            WorkerLine(worker_id, external_id, username, market),
            session_id,
            SessionLine(external_session_id or ""),
            cause,
            bonuses,
            amount,
            str(int(hashed)),
        )
        for worker_id, external_id, username, market, session_id, external_session_id, cause, bonuses, amount, hashed in rows
    ]


def as_groups(entries: Iterable[BonusEntry]) -> list[UnpaidGroup]:
    """Each bonus read already (its worker, user and session with it) as a group of one."""
    return [
        UnpaidGroup(
            entry.worker_id,
            WorkerLine(
                entry.worker_id, entry.worker.external_id, entry.worker.user.get_username(), entry.worker.market
            ),
            entry.study_session_id,
            SessionLine(entry.study_session.external_session_id or ""),
            entry.cause,
            1,
            entry.amount,
            ids_hash([entry.pk]),
        )
        for entry in entries
    ]


def market_accounts(groups: Iterable[UnpaidGroup]) -> dict[str, Any]:
    """Where each unpaid bonus goes: {"prolific": MarketAccount, "mturk": ..., "left_out": ...,
    "left_out_rows": [per worker and reason: worker, market, bonuses, amount, why, causes],
    "total": every bonus's amount}. Every bonus is in exactly one account, so the three add up."""
    accounts = {key: MarketAccount(key) for key in ("prolific", "mturk", "left_out")}
    rows: dict[tuple[int, str], dict[str, Any]] = {}
    total = Decimal("0")
    for group in groups:
        total += group.amount
        account = file_of(group).replace("-", "_")
        accounts[account].add(group)
        if account == "left_out":
            why = left_out_because(group)
            row = rows.setdefault(
                (group.worker_id, why),
                {
                    "worker": group.worker,
                    "market": group.worker.market,
                    "bonuses": 0,
                    "amount": Decimal("0"),
                    "why": why,
                    "causes": {},
                },
            )
            row["bonuses"] += group.bonuses
            row["amount"] += group.amount
            row["causes"][group.cause_key] = row["causes"].get(group.cause_key, 0) + group.bonuses
    left_out_rows = sorted(rows.values(), key=lambda row: (str(row["worker"]), row["why"]))
    for row in left_out_rows:
        row["for"] = describe_causes(row["causes"])
    return {**accounts, "left_out_rows": left_out_rows, "total": total}


LEFT_OUT_COLUMNS = ["worker", "market", "bonuses", "amount", "for", "why_left_out"]


def left_out_csv(entries: Iterable[BonusEntry]) -> str:
    """The unpaid bonuses no market file pays, one line per worker and reason, with a header."""
    out = io.StringIO()
    writer = spreadsheet_safe.writer(out, lineterminator="\n")
    writer.writerow(LEFT_OUT_COLUMNS)
    for row in market_accounts(as_groups(entries))["left_out_rows"]:
        worker = row["worker"]
        name = worker.external_id or worker.username
        writer.writerow([name, row["market"], row["bonuses"], money(row["amount"]), row["for"], row["why"]])
    return out.getvalue()


def unpaid_by_cause(groups: Iterable[UnpaidGroup]) -> list[tuple[CauseWords, int, Decimal]]:
    """[(cause, bonuses, amount)] of these unpaid bonuses, causes in CAUSES order, empty ones left out."""
    found: dict[str, tuple[int, Decimal]] = {}
    for group in groups:
        n, amount = found.get(group.cause_key, (0, Decimal("0")))
        found[group.cause_key] = (n + group.bonuses, amount + group.amount)
    return [(CAUSE_BY_KEY[key], *found[key]) for key in CAUSE_BY_KEY if key in found]


DISCRETIONARY_REASON = "Discretionary bonus"


def give_discretionary_bonus(
    study_session: StudySession, amount: Decimal | str, reason: str, *, by: User | None = None
) -> BonusEntry:
    """A bonus a researcher gives at will (good work, a problem on our side), with its reason: one
    `earned` row of the session's worker, in the study's currency, owed and paid as every other."""
    reason = " ".join((reason or "").split())
    if not reason:
        raise PaymentRefused("A discretionary bonus needs a reason (the MTurk worker reads it; it is your record).")
    try:
        value = Decimal(str(amount)).quantize(CENT)
    except ArithmeticError as error:
        raise PaymentRefused("The amount must be a number, such as 1.50.") from error
    if value <= 0:
        raise PaymentRefused("The amount must be more than 0.")
    study = study_session.study
    with transaction.atomic():
        audit.record(
            "payment.discretionary_bonus",
            actor=by,
            subject=study_session,
            team_id=study.team_id,
            after={"amount": value, "currency": study.bonus_currency, "worker": study_session.worker_id},
            reason=reason,
        )
        return BonusEntry.objects.create(
            kind=BonusKind.EARNED,
            worker_id=study_session.worker_id,
            study=study,
            study_session=study_session,
            pair=None,
            amount=value,
            currency=study.bonus_currency,
            cause=BonusCause.OTHER,
            reason=with_open_link_note(study, f"{DISCRETIONARY_REASON}: {reason}"),
            recorded_by=by,
        )


def record_bonus(
    worker: Worker,
    study_session: StudySession | None,
    pair: Pair,
    amount: Decimal | None,
    reason: str,
    *,
    cause: BonusCause,
) -> BonusEntry | None:
    """One `earned` row for `pair` in the study's currency, in the caller's transaction; None when
    there is nothing to pay (no study visit, no amount) or the row exists already (the ledger's
    unique worker + item + session keeps it counted once). For bonuses other than catch trials,
    e.g. a verified fooled example of an adversarial study."""
    if study_session is None or amount is None or amount <= 0:
        return None
    if BonusEntry.objects.filter(worker=worker, pair=pair, study_session=study_session).exists():
        return None
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study_session.study,
        study_session=study_session,
        pair=pair,
        amount=amount,
        currency=study_session.study.bonus_currency,
        cause=cause,
        reason=with_open_link_note(study_session.study, reason),
    )
