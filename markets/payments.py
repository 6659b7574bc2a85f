"""The one payment machine: every payer (the Prolific API, the MTurk API, here; a payment file paid
on the market's website, markets.hand_payments) takes bonuses owed by the one rule
(markets.selectors.owed_entries) and moves them owed -> claimed -> sent -> confirmed; the ledger's
`paid` row is the one record of "confirmed" (docs/markets.md, "The payment machine").

No transaction is ever held open across a call to a market: each step commits what it is about to
do before the call and what the market answered after it, so a process killed at any point
leaves a state the next payer (or the reconcile task) can settle from the market's own record.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from audit import services as audit
from corpus.models import Market
from crowd.models import Study
from quality import bonuses
from quality.models import BonusEntry, BonusKind

from . import selectors
from .answers import nothing_was_paid, read_settles, settled_after
from .clients import MarketError, MarketTimeout, MarketUnreachable
from .clients.mturk import MTurkClient
from .clients.prolific import ProlificClient
from .connections import PROLIFIC_BULK_MAX, ConnectionRefused, client_for, connected, refused_outright
from .models import (
    IN_FLIGHT,
    BatchState,
    BonusBatch,
    BonusPayment,
    ConnectedMarket,
    MarketConnection,
    Payer,
    PaymentState,
)

CENTS = Decimal("100")
# The API's sends the reconcile settles from the market's record: sent without an answer yet (a
# payer killed mid-call), or answered with something that proved nothing (answers).
UNSETTLED_SENDS = (PaymentState.SENT, PaymentState.UNKNOWN)


def _now() -> datetime:
    return timezone.now()


# --- bonus payments --------------------------------------------------------------------------


@dataclass
class PaymentOutcome:
    paid: int = 0
    amount: Decimal = Decimal("0")
    waiting: int = 0
    refused: int = 0
    set_aside: int = 0
    errors: list[str] = field(default_factory=list)

    def line(self, currency: str) -> str:
        text = f"Paid on the market: {self.paid} bonus(es), {bonuses.money(self.amount)} {currency}."
        if self.waiting:
            text += (
                f" {self.waiting} sent without the market's confirmation yet: they are confirmed from the "
                "market's record (reconcile), never sent again blindly."
            )
        if self.refused:
            text += f" {self.refused} refused: {self.errors[0] if self.errors else 'see the calls'}."
        if self.set_aside:
            text += (
                f" {self.set_aside} set aside: the market refused their participant (the bonus page says why); "
                "the others were paid."
            )
        return text

    def add(self, other: "PaymentOutcome") -> None:
        self.paid += other.paid
        self.amount += other.amount
        self.waiting += other.waiting
        self.refused += other.refused
        self.set_aside += other.set_aside
        self.errors += other.errors


def _cents(amount: Decimal) -> int:
    return int((Decimal(amount) * CENTS).to_integral_value())


def _lease() -> datetime:
    return _now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS)


def _confirm_payments(study: Study, payment_ids: list[int], by: Any = None) -> PaymentOutcome:
    """The market confirmed these payments: sent -> confirmed (`confirm_paid`), in one transaction.
    Idempotent: a payment row exists only until its bonus is confirmed (a reconcile and a payer may
    both confirm one batch)."""
    outcome = PaymentOutcome()
    with transaction.atomic():
        rows = list(BonusPayment.objects.select_for_update().filter(pk__in=payment_ids).order_by("pk"))
        if not rows:
            return outcome
        result = confirm_paid(study, [r.earned_id for r in rows], by, confirmed_by_market=True)
    outcome.paid = result["paid"]
    outcome.amount = result["amount"]
    return outcome


def confirm_paid(study: Study, earned_ids: list[int], by: Any, *, confirmed_by_market: bool) -> dict[str, Any]:
    """The machine's last step, for every payer: the ledger's `paid` rows (quality.bonuses.mark_paid,
    the one record of "paid") and the bonuses' payment rows, whose job ended, deleted. In the
    caller's transaction."""
    result = bonuses.mark_paid(
        study, earned_ids, by=by if getattr(by, "pk", None) else None, confirmed_by_market=confirmed_by_market
    )
    BonusPayment.objects.filter(earned_id__in=earned_ids).delete()
    return result


def _release_payments(payment_ids: list[int], error: str) -> None:
    """Nothing was paid for these (the market refused, or nothing was sent): owed again."""
    BonusPayment.objects.filter(pk__in=payment_ids).update(state=PaymentState.RELEASED, last_error=error[:300])


class NotPaidRefused(ValueError):
    """A "not paid" that the market's record cannot back yet; the message says when it can."""


def _pay_failed(
    outcome: PaymentOutcome, connection: MarketConnection, payment_ids: list[int], error: MarketError
) -> bool:
    """A pay call that failed. Only the market's documented "nothing was done" answers
    (answers.nothing_was_paid) free the rows, and answer True; any other answer may hide money
    moved, so the rows are `unknown` until the market's record settles them."""
    if nothing_was_paid(connection.market, error):
        _release_payments(payment_ids, str(error))
        outcome.refused += len(payment_ids)
        outcome.errors.append(str(error))
        return True
    BonusPayment.objects.filter(pk__in=payment_ids).update(state=PaymentState.UNKNOWN, last_error=str(error)[:300])
    outcome.waiting += len(payment_ids)
    return False


def lock_payers(connection: MarketConnection) -> None:
    """The lock every payer of one study queues on (in the caller's transaction)."""
    MarketConnection.objects.select_for_update().get(pk=connection.pk)


def waiting_participants(connection: MarketConnection) -> set[int]:
    """On Prolific, the workers (ids) whose new bonuses wait, for the API payer and the payment
    files alike: those with a bonus held by a payer and not confirmed. The reconcile compares a
    participant's bonus total on Prolific with what the ledger paid before one bulk bonus, so no
    other money may reach them meanwhile. (MTurk names each bonus in its record: nobody waits.)"""
    if connection.market != ConnectedMarket.PROLIFIC:
        return set()
    return set(
        BonusPayment.objects.filter(connection=connection, state__in=IN_FLIGHT).values_list(
            "earned__worker_id", flat=True
        )
    )


def _claim_owed(connection: MarketConnection) -> list[BonusPayment]:
    """Take the study's unpaid earned bonuses that no payer holds, under the connection's row lock
    (payers of one study queue here for a moment; the market calls happen after the commit)."""
    study = connection.study
    now = _now()
    with transaction.atomic():
        lock_payers(connection)
        # Rows whose earlier API payer stopped before sending anything: free again. (A file's claim
        # has no lease: it holds until the researcher confirms or releases it.)
        BonusPayment.objects.filter(
            connection=connection, payer=Payer.API, state=PaymentState.CLAIMED, lease_until__lt=now, batch__isnull=True
        ).update(state=PaymentState.RELEASED, last_error="Its payer stopped before sending; nothing was sent.")
        # The one 'owed' rule (a held session's bonuses wait for the hold's decision; a bonus a
        # payment file claimed is the researcher's to confirm or release).
        owed = list(selectors.owed_entries(study).order_by("pk"))
        waiting = waiting_participants(connection)
        owed = [entry for entry in owed if entry.worker_id not in waiting]
        claimed = []
        for entry in owed:
            payment, created = BonusPayment.objects.get_or_create(
                earned=entry,
                defaults={"connection": connection, "request_token": f"nli-bonus-{entry.pk}", "lease_until": _lease()},
            )
            if not created:
                payment.state = PaymentState.CLAIMED
                payment.payer = Payer.API
                payment.batch = None
                payment.lease_until = _lease()
                payment.save(update_fields=["state", "payer", "batch", "lease_until"])
            payment.earned = entry
            claimed.append(payment)
    return claimed


def pay_owed_bonuses(study: Study, *, by: Any = None) -> PaymentOutcome:
    """Pay the study's unpaid bonuses on its market: exactly what the ledger says is owed and no
    payer holds. Safe to press twice, from twenty tabs, after a time-out or a killed process:
    what an earlier attempt may have paid is first settled from the market's record."""
    connection = connected(study)
    # Credentials that cannot be opened fail here, before any bonus is claimed for a payer that
    # could never send it (SealingUnavailable, said on the page).
    client_for(connection, by)
    outcome = reconcile_payments(connection, by=by)
    claimed = _claim_owed(connection)
    if not claimed:
        return outcome
    if connection.market == ConnectedMarket.PROLIFIC:
        outcome.add(_pay_on_prolific(connection, claimed, by))
    else:
        outcome.add(_pay_on_mturk(connection, claimed, by))
    return outcome


def _prolific_participant(payment: BonusPayment) -> str | None:
    worker = payment.earned.worker
    return worker.external_id if worker.market == Market.PROLIFIC and worker.external_id else None


def _pay_on_prolific(connection: MarketConnection, claimed: list[BonusPayment], by: Any) -> PaymentOutcome:
    outcome = PaymentOutcome()
    strangers = [p.pk for p in claimed if _prolific_participant(p) is None]
    if strangers:
        _release_payments(strangers, "Not a Prolific participant: pay this bonus by hand.")
        outcome.refused += len(strangers)
        outcome.errors.append("some bonuses are for workers who did not come from Prolific")
    by_participant: dict[str, list[BonusPayment]] = defaultdict(list)
    for payment in claimed:
        participant = _prolific_participant(payment)
        if participant:
            by_participant[participant].append(payment)
    participants = sorted(by_participant)
    for start in range(0, len(participants), PROLIFIC_BULK_MAX):
        part = {pid: by_participant[pid] for pid in participants[start : start + PROLIFIC_BULK_MAX]}
        outcome.add(_pay_one_bulk(connection, part, by))
    return outcome


def _ledger_paid_cents(study: Study, worker_ids: Iterable[int]) -> dict[int, int]:
    totals: dict[int, int] = defaultdict(int)
    for worker_id, amount in BonusEntry.objects.filter(
        study=study, kind=BonusKind.PAID, worker_id__in=list(worker_ids)
    ).values_list("worker_id", "amount"):
        totals[worker_id] += _cents(amount)
    return totals


def _pay_one_bulk(connection: MarketConnection, part: dict[str, list[BonusPayment]], by: Any) -> PaymentOutcome:
    """Prolific's two steps for one bulk bonus. Step one (create) pays nothing, so its failure or
    time-out frees the rows; step two (pay) is sent once, after the batch is committed as paying."""
    study = connection.study
    outcome = PaymentOutcome()
    amounts = {pid: sum(_cents(p.earned.amount) for p in rows) for pid, rows in part.items()}
    csv_bonuses = "".join(f"{pid},{Decimal(cents) / CENTS:.2f}\n" for pid, cents in sorted(amounts.items()))
    payment_ids = [p.pk for rows in part.values() for p in rows]
    worker_of = {pid: rows[0].earned.worker_id for pid, rows in part.items()}
    with transaction.atomic():
        batch = BonusBatch.objects.create(
            connection=connection, csv_bonuses=csv_bonuses, amounts_cents=amounts, lease_until=_lease()
        )
        BonusPayment.objects.filter(pk__in=payment_ids).update(batch=batch)
    client = client_for(connection, by)
    assert isinstance(client, ProlificClient)
    try:
        created = client.create_bonuses(connection.market_study_id, csv_bonuses)
    except MarketError as error:
        # Nothing is paid until step two: a bulk bonus created without our hearing of it is never paid.
        BonusBatch.objects.filter(pk=batch.pk).update(state=BatchState.ABANDONED)
        if refused_outright(error) and len(part) > 1:
            # One participant the market refuses must not stop the others' bonuses: each half is
            # created again (creating pays nothing) until the refused ones stand alone. Unbound
            # from the abandoned batch, with a fresh lease, a payer that dies here leaves them to
            # the lease's end (_claim_owed frees them).
            BonusPayment.objects.filter(pk__in=payment_ids).update(batch=None, lease_until=_lease())
            names = sorted(part)
            for half in (names[: len(names) // 2], names[len(names) // 2 :]):
                outcome.add(_pay_one_bulk(connection, {pid: part[pid] for pid in half}, by))
            return outcome
        if refused_outright(error):
            BonusPayment.objects.filter(pk__in=payment_ids).update(
                state=PaymentState.ASIDE, last_error=str(error)[:300]
            )
            outcome.set_aside += len(payment_ids)
            outcome.errors.append(str(error))
            return outcome
        _release_payments(payment_ids, str(error))
        outcome.refused += len(payment_ids)
        outcome.errors.append(str(error))
        return outcome
    with transaction.atomic():
        locked = BonusBatch.objects.select_for_update().get(pk=batch.pk)
        if locked.state != BatchState.NEW:
            return outcome  # a reconcile gave it up as stalled: its rows went to another payer
        paid_before = _ledger_paid_cents(study, worker_of.values())
        locked.market_bulk_id = str(created["id"])[:128]
        locked.state = BatchState.PAYING
        locked.pay_sent_at = _now()
        locked.paid_before_cents = {pid: paid_before.get(worker_of[pid], 0) for pid in part}
        locked.save(update_fields=["market_bulk_id", "state", "pay_sent_at", "paid_before_cents"])
        BonusPayment.objects.filter(pk__in=payment_ids).update(
            state=PaymentState.SENT, sent_at=_now(), attempts=1, lease_until=_lease()
        )
    try:
        client.pay_bonuses(locked.market_bulk_id)
    except MarketError as error:
        # A time-out, and no connection too (one may have carried the request), waits for the record.
        if _pay_failed(outcome, connection, payment_ids, error):  # documented: nothing of it was paid
            BonusBatch.objects.filter(pk=batch.pk).update(state=BatchState.ABANDONED)
        return outcome
    outcome.add(_confirm_batch(connection, batch.pk, by))
    return outcome


def _confirm_batch(connection: MarketConnection, batch_id: int, by: Any) -> PaymentOutcome:
    with transaction.atomic():
        batch = BonusBatch.objects.select_for_update().get(pk=batch_id)
        if batch.state == BatchState.PAYING:
            batch.state = BatchState.PAID
            batch.confirmed_at = _now()
            batch.save(update_fields=["state", "confirmed_at"])
        ids = list(batch.payments.values_list("pk", flat=True))
        return _confirm_payments(connection.study, ids, by)


# MTurk's error for a request it refuses as such (the worker, the assignment, the amount); other
# errors (credentials, throttling, its own faults) say nothing about this bonus.
MTURK_REFUSED_REQUEST = "RequestError"


def _mturk_reason(payment: BonusPayment) -> str:
    # The tag names the ledger row, so ListBonusPayments tells which of our rows MTurk paid.
    return f"{payment.earned.reason} [bonus {payment.earned_id}]"[:1000]


def _pay_on_mturk(connection: MarketConnection, claimed: list[BonusPayment], by: Any) -> PaymentOutcome:
    outcome = PaymentOutcome()
    client = client_for(connection, by)
    assert isinstance(client, MTurkClient)
    for payment in claimed:
        worker = payment.earned.worker
        assignment = payment.earned.study_session.external_session_id
        if worker.market != Market.MTURK or not worker.external_id or not assignment:
            _release_payments([payment.pk], "Not an MTurk worker with an assignment: pay this bonus by hand.")
            outcome.refused += 1
            outcome.errors.append("some bonuses are for workers who did not come from MTurk")
            continue
        payment.attempts += 1
        BonusPayment.objects.filter(pk=payment.pk).update(
            state=PaymentState.SENT, sent_at=_now(), attempts=payment.attempts, lease_until=_lease()
        )
        outcome.add(_send_mturk_bonus(connection, client, payment, by))
    return outcome


def _send_mturk_bonus(
    connection: MarketConnection, client: MTurkClient, payment: BonusPayment, by: Any
) -> PaymentOutcome:
    outcome = PaymentOutcome()
    earned = payment.earned
    try:
        client.send_bonus(
            earned.worker.external_id,
            earned.study_session.external_session_id,
            bonuses.money(earned.amount),
            _mturk_reason(payment),
            payment.request_token,
        )
    except (MarketTimeout, MarketUnreachable) as error:
        _pay_failed(outcome, connection, [payment.pk], error)  # unknown: these have no status
        return outcome
    except MarketError as error:
        if "UniqueRequestToken" in str(error) or "already" in str(error).lower():
            # MTurk has this token: an earlier attempt went through. Its record decides.
            return _reconcile_mturk_payment(connection, client, payment, by, resend=False)
        if error.code == MTURK_REFUSED_REQUEST:
            # MTurk refused this bonus itself (a worker and assignment that do not match, say): it is
            # set aside with MTurk's reason, as Prolific's refused ids are, and the others are paid.
            BonusPayment.objects.filter(pk=payment.pk).update(state=PaymentState.ASIDE, last_error=str(error)[:300])
            outcome.set_aside += 1
            outcome.errors.append(str(error))
            return outcome
        _pay_failed(outcome, connection, [payment.pk], error)
        return outcome
    return _confirm_payments(connection.study, [payment.pk], by)


def _reconcile_mturk_payment(
    connection: MarketConnection, client: MTurkClient, payment: BonusPayment, by: Any, *, resend: bool
) -> PaymentOutcome:
    """MTurk's ListBonusPayments is the record: our tag there means paid; absent, the same token is
    sent again (MTurk pays one bonus per UniqueRequestToken)."""
    outcome = PaymentOutcome()
    tag = f"[bonus {payment.earned_id}]"
    read_at = _now()
    try:
        listed = client.bonus_payments(payment.earned.study_session.external_session_id)
    except MarketError as error:
        BonusPayment.objects.filter(pk=payment.pk).update(last_error=str(error)[:300])
        outcome.waiting += 1
        return outcome
    BonusPayment.objects.filter(pk=payment.pk).update(record_read_at=read_at)
    if any(tag in str(row.get("Reason", "")) for row in listed):
        return _confirm_payments(connection.study, [payment.pk], by)
    if not resend:
        outcome.waiting += 1
        return outcome
    # Sent again under the same UniqueRequestToken, MTurk's documented retry for an answer lost: it
    # pays one bonus per token, so a first send the listing does not show yet is not paid twice.
    payment.attempts += 1
    BonusPayment.objects.filter(pk=payment.pk).update(attempts=payment.attempts, sent_at=_now(), lease_until=_lease())
    return _send_mturk_bonus(connection, client, payment, by)


def reconcile_payments(connection: MarketConnection, *, by: Any = None, now_please: bool = False) -> PaymentOutcome:
    """Settle what earlier attempts left unsure, from the market's own record, before anything is
    paid again: Prolific bulk bonuses whose pay was sent (confirmed when the participants' bonuses
    on Prolific show them; never paid again: Prolific's pay is not idempotent), bulk bonuses never
    paid (given up: their rows are free), MTurk bonuses sent without an answer (confirmed from
    ListBonusPayments, else sent again under the same UniqueRequestToken). `now_please` (a
    researcher's button) also looks at MTurk bonuses a payer may still hold: sending one twice
    under its token pays it once."""
    outcome = PaymentOutcome()
    now = _now()
    mturk_before = now + timedelta(days=1) if now_please else now
    if connection.market == ConnectedMarket.PROLIFIC:
        with transaction.atomic():
            stalled = list(
                BonusBatch.objects.select_for_update(skip_locked=True).filter(
                    connection=connection, state=BatchState.NEW, lease_until__lt=now
                )
            )
            for batch in stalled:
                batch.state = BatchState.ABANDONED
                batch.save(update_fields=["state"])
                _release_payments(
                    list(batch.payments.values_list("pk", flat=True)),
                    "Its payer stopped before paying; the bulk bonus was never paid.",
                )
        paying = list(BonusBatch.objects.filter(connection=connection, state=BatchState.PAYING))
        if not paying:
            return outcome
        client = client_for(connection, by)
        assert isinstance(client, ProlificClient)
        # The read's time is when it was asked for: what the record shows was there by then.
        read_at = _now()
        try:
            submissions = client.submissions(connection.market_study_id)
        except MarketError as error:
            outcome.waiting += sum(batch.payments.count() for batch in paying)
            outcome.errors.append(str(error))
            return outcome
        BonusBatch.objects.filter(pk__in=[batch.pk for batch in paying], state=BatchState.PAYING).filter(
            models.Q(record_read_at__isnull=True) | models.Q(record_read_at__lt=read_at)
        ).update(record_read_at=read_at)
        on_market: dict[str, int] = defaultdict(int)
        for submission in submissions:
            paid = submission.get("bonus_payments") or []
            on_market[str(submission.get("participant_id", ""))] += sum(
                int(amount) for amount in paid if isinstance(amount, int | float)
            )
        for batch in paying:
            if all(
                on_market.get(pid, 0) >= int(batch.paid_before_cents.get(pid, 0)) + int(cents)
                for pid, cents in batch.amounts_cents.items()
            ):
                outcome.add(_confirm_batch(connection, batch.pk, by))
            else:
                outcome.waiting += batch.payments.count()
        return outcome
    unsure = list(
        # The API's sends only: a downloaded file's bonuses are the researcher's to settle.
        BonusPayment.objects.filter(
            connection=connection, payer=Payer.API, state__in=UNSETTLED_SENDS, lease_until__lt=mturk_before
        )
        .select_related("earned__worker", "earned__study_session")
        .order_by("pk")
    )
    if unsure:
        client = client_for(connection, by)
        assert isinstance(client, MTurkClient)
        for payment in unsure:
            # Held for the length of one reconcile, so two reconcilers do not send it together.
            if not BonusPayment.objects.filter(pk=payment.pk, lease_until__lt=mturk_before).update(
                lease_until=_lease()
            ):
                continue
            outcome.add(_reconcile_mturk_payment(connection, client, payment, by, resend=True))
    return outcome


def resolve_unpaid_batch(batch: BonusBatch, *, by: Any = None) -> int:
    """A researcher found on Prolific that this bulk bonus was NOT paid: its rows may be paid again.
    Prolific's record is read first (the reconcile): a bulk bonus it shows paid is confirmed instead,
    and nothing is freed while Prolific cannot be asked (ConnectionRefused), nor while no read of
    its record made after the pay, once the record could follow it, shows it unpaid
    (NotPaidRefused: the market pays first and lists the payment later). The release and its audit
    entry are one transaction. Returns how many rows were freed."""
    asked = reconcile_payments(batch.connection, by=by)
    if asked.errors:
        raise ConnectionRefused(
            f"Prolific could not be asked whether it paid this bulk bonus ({asked.errors[0]}): nothing was freed."
        )
    with transaction.atomic():
        locked = BonusBatch.objects.select_for_update(of=("self",)).select_related("connection__study").get(pk=batch.pk)
        if locked.state != BatchState.PAYING:
            return 0
        if not read_settles(locked.pay_sent_at, locked.record_read_at):
            raise NotPaidRefused(_too_early(locked))
        locked.state = BatchState.ABANDONED
        locked.save(update_fields=["state"])
        ids = list(locked.payments.values_list("pk", flat=True))
        _release_payments(ids, "A researcher found on Prolific that this bulk bonus was not paid.")
        audit.record(
            "payment.market_not_paid",
            actor=by,
            subject=locked,
            team_id=locked.connection.study.team_id,
            before={"state": BatchState.PAYING.value},
            after={
                "state": BatchState.ABANDONED.value,
                "released_bonuses": len(ids),
                "amounts_cents": locked.amounts_cents,
                "pay_sent_at": _stamp(locked.pay_sent_at),
                "record_read_at": _stamp(locked.record_read_at),
            },
            reason="Prolific's record, read after the pay, shows it was not paid.",
        )
    return len(ids)


def _stamp(moment: datetime | None) -> str:
    return moment.isoformat() if moment else ""


def _too_early(batch: BonusBatch) -> str:
    when = f"{settled_after(batch.pay_sent_at):%Y-%m-%d %H:%M:%S} UTC" if batch.pay_sent_at else "later"
    return (
        f"Nothing was freed: bulk bonus {batch.market_bulk_id} may still be paid. Prolific pays first and lists "
        "the payment in its record afterwards, so its record is believed to say 'not paid' only when read "
        f"after {when}; press again then (the record is read again on each press)."
    )
