"""Writes of the markets app: connections, approvals, bonus payments, market events and lists.

No transaction is ever held open across a call to a market: each step commits what it is about to
do before the call and what the market answered after it, so a process killed at any point
leaves a state the next payer (or the reconcile task) can settle from the market's own record
(docs/markets.md, "How a payment is reconciled").
"""

import base64
import hashlib
import hmac
import json
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import partial
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from corpus.models import Market, Worker
from crowd.holds import decide_code_holds, money_may_go
from crowd.models import CodeHoldDecision, Study, StudySession
from crowd.registry import release_open_claims_of_session
from quality import bonuses
from quality.models import BonusEntry, BonusKind, QualificationAttempt

from . import selectors
from .clients import CallRecord, MarketError, MarketTimeout, MarketUnreachable
from .clients.mturk import MTurkClient
from .clients.prolific import ProlificClient
from .models import (
    BatchState,
    BonusBatch,
    BonusPayment,
    ConnectedMarket,
    ListEntry,
    ListKind,
    MarketCall,
    MarketConnection,
    Payer,
    PaymentState,
    ReviewDecision,
    ReviewState,
    SessionReview,
    WebhookDelivery,
)
from .sealing import SealingUnavailable, seal, seal_text, unseal, unseal_text

CENTS = Decimal("100")
# Prolific's bulk bonus takes at most this many participants in one request.
PROLIFIC_BULK_MAX = 200
# Prolific's rejection categories (docs.prolific.com, submission transition).
REJECTION_CATEGORIES = [
    ("FAILED_CHECK", "failed an attention check"),
    ("LOW_EFFORT", "low effort"),
    ("FAILED_INSTRUCTIONS", "did not follow the instructions"),
    ("TOO_QUICKLY", "too quick"),
    ("NO_DATA", "no data"),
    ("BAD_CODE", "wrong completion code"),
    ("NO_CODE", "no completion code"),
    ("OTHER", "other"),
]
# Prolific submission statuses that end a visit: its claims go back to the pool at once.
ENDING_STATUSES = {"RETURNED": "returned", "TIMED-OUT": "timed out", "REJECTED": "rejected"}


class ConnectionRefused(ValueError):
    """A connection could not be saved; the message says which field and why."""


def _now() -> datetime:
    return timezone.now()


def connection_of(study: Study) -> MarketConnection | None:
    return MarketConnection.objects.filter(study=study).first()


def connected(study: Study) -> MarketConnection:
    """The study's connection, which an action on the market needs."""
    if (connection := connection_of(study)) is None:
        raise ConnectionRefused("This study has no market connection.")
    return connection


# --- the connection --------------------------------------------------------------------------


def save_connection(
    study: Study,
    *,
    market: str,
    market_study_id: str = "",
    hit_type_id: str = "",
    mturk_live: bool = False,
    token: str = "",
    access_key_id: str = "",
    secret_access_key: str = "",
    webhook_secret: str = "",
    approve_automatically: bool = False,
    qualified_list_id: str = "",
    excluded_list_id: str = "",
) -> MarketConnection:
    """Create or change the study's connection. Blank credentials keep the stored ones; the
    credentials are sealed (markets.sealing) before they reach the database."""
    if market not in ConnectedMarket.values:
        raise ConnectionRefused("Choose Prolific or Mechanical Turk.")
    existing = connection_of(study)
    old = _stored_credentials(existing.sealed_credentials) if existing and existing.market == market else {}
    if market == ConnectedMarket.PROLIFIC:
        credentials = {"token": token.strip() or old.get("token", "")}
        if not credentials["token"]:
            raise ConnectionRefused("Prolific needs an API token (Prolific: Workspace settings → API tokens).")
        if not market_study_id.strip():
            raise ConnectionRefused("Prolific needs the study's id (the STUDY_ID in the study's URL on Prolific).")
    else:
        credentials = {
            "access_key_id": access_key_id.strip() or old.get("access_key_id", ""),
            "secret_access_key": secret_access_key.strip() or old.get("secret_access_key", ""),
        }
        if not (credentials["access_key_id"] and credentials["secret_access_key"]):
            raise ConnectionRefused("MTurk needs an AWS access key id and its secret access key.")
        if not hit_type_id.strip():
            raise ConnectionRefused("MTurk needs the HIT type id the study's HITs share.")
    try:
        sealed = seal(credentials)
        # A blank secret keeps the stored one, sealed again under the first key: saving each
        # connection is how a key is rotated, so nothing may stay sealed under the old key only.
        kept_secret = _stored_secret(existing.sealed_webhook_secret) if existing else ""
        sealed_secret = seal_text(webhook_secret.strip() or kept_secret)
    except SealingUnavailable as error:
        raise ConnectionRefused(str(error)) from error
    connection = existing or MarketConnection(study=study, webhook_key=secrets.token_urlsafe(24))
    connection.market = market
    connection.market_study_id = market_study_id.strip()
    connection.hit_type_id = hit_type_id.strip()
    connection.mturk_live = mturk_live
    connection.sealed_credentials = sealed
    connection.sealed_webhook_secret = sealed_secret
    connection.approve_automatically = approve_automatically
    connection.qualified_list_id = qualified_list_id.strip()
    connection.excluded_list_id = excluded_list_id.strip()
    connection.save()
    return connection


def _stored_credentials(sealed: str) -> dict[str, Any]:
    """The stored credentials, or none when no key opens them any more (the key was lost): the form
    must then give them again, and the checks of save_connection say which are missing."""
    try:
        return unseal(sealed)
    except SealingUnavailable:
        return {}


def _stored_secret(sealed: str) -> str:
    try:
        return unseal_text(sealed)
    except SealingUnavailable:
        return ""


def _recorder(
    connection: MarketConnection, by: Any = None, calls: list[MarketCall] | None = None
) -> Callable[[CallRecord], None]:
    def record(entry: CallRecord) -> None:
        call = MarketCall.objects.create(
            connection=connection,
            action=entry.action,
            request_summary=entry.request_summary,
            status_code=entry.status_code,
            answer=entry.answer,
            ok=entry.ok,
            error=entry.error[:300],
            duration_ms=entry.duration_ms,
            made_by=by if getattr(by, "pk", None) else None,
        )
        if calls is not None:
            calls.append(call)

    return record


def client_for(
    connection: MarketConnection,
    by: Any = None,
    calls: list[MarketCall] | None = None,
    *,
    timeout: float | None = None,
    patient: bool = True,
) -> ProlificClient | MTurkClient:
    """The connection's market client; `timeout` and `patient` (Prolific's): a participant waits on it."""
    credentials = unseal(connection.sealed_credentials)
    record = _recorder(connection, by, calls)
    if connection.market == ConnectedMarket.PROLIFIC:
        return ProlificClient(credentials.get("token", ""), record=record, timeout=timeout, patient=patient)
    return MTurkClient(
        credentials.get("access_key_id", ""),
        credentials.get("secret_access_key", ""),
        live=connection.mturk_live,
        record=record,
    )


def test_connection(connection: MarketConnection, by: Any = None) -> tuple[bool, str]:
    """Ask the market who the credentials belong to and whether it knows the study: (ok, one line)."""
    try:
        client = client_for(connection, by)
        if isinstance(client, ProlificClient):
            user = client.me()
            study = client.study(connection.market_study_id)
            line = (
                f"Connected to Prolific as {user.get('email') or user.get('id') or 'this token'}: study "
                f"“{study.get('name', connection.market_study_id)}” ({study.get('status', 'status unknown')})."
            )
        else:
            balance = client.balance()
            where = "live marketplace" if connection.mturk_live else "sandbox"
            line = f"Connected to the MTurk {where}: balance {balance.get('AvailableBalance', '?')} USD."
        ok = True
    except (MarketError, SealingUnavailable) as error:
        ok, line = False, str(error)
    connection.last_check = line[:300]
    connection.last_checked_at = _now()
    connection.save(update_fields=["last_check", "last_checked_at", "updated_at"])
    return ok, line


# --- approvals and rejections ----------------------------------------------------------------


@dataclass
class ReviewOutcome:
    confirmed: int = 0
    failed: int = 0
    unanswered: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def line(self, verb: str) -> str:
        parts = [f"{verb} on the market: {self.confirmed}"]
        if self.unanswered:
            parts.append(f"{self.unanswered} sent without an answer (asked again on the next try)")
        if self.failed:
            parts.append(f"{self.failed} refused: {self.errors[0] if self.errors else 'see the calls'}")
        if self.skipped:
            parts.append(f"{self.skipped} already decided or not complete, left alone")
        return "; ".join(parts) + "."


def _take_for_review(
    sessions: Iterable[StudySession], decision: str, *, reason: str, by: Any, automatic: bool
) -> tuple[list[SessionReview], int]:
    """Write one review per session before the market is asked (unique per session: a session is
    never decided twice; a review the market refused or never answered may be sent again)."""
    taken, skipped = [], 0
    for session in sessions:
        with transaction.atomic():
            review, created = SessionReview.objects.select_for_update().get_or_create(
                study_session=session,
                defaults={
                    "decision": decision,
                    "reason": reason,
                    "automatic": automatic,
                    "decided_by": by if getattr(by, "pk", None) else None,
                },
            )
            if not created and (review.decision != decision or review.state == ReviewState.CONFIRMED):
                skipped += 1
                continue
            if not created:
                review.state = ReviewState.SENT
                review.save(update_fields=["state", "updated_at"])
        taken.append(review)
    return taken, skipped


def _finish_reviews(reviews: list[SessionReview], state: str, call: MarketCall | None) -> None:
    SessionReview.objects.filter(pk__in=[r.pk for r in reviews]).update(state=state, call=call, updated_at=_now())
    if state == ReviewState.CONFIRMED:
        # Approving or rejecting a held session on its market decides its hold: its bonuses follow.
        for decision, verdict in (
            (ReviewDecision.APPROVE, CodeHoldDecision.RELEASED),
            (ReviewDecision.REJECT, CodeHoldDecision.REFUSED),
        ):
            decided = [r for r in reviews if r.decision == decision]
            if decided:
                decide_code_holds([r.study_session_id for r in decided], verdict, by=decided[0].decided_by)


def approve_sessions(
    study: Study, session_ids: Iterable[int | str] | None = None, *, by: Any = None, automatic: bool = False
) -> ReviewOutcome:
    """Approve completed sessions on the market in one action. Without ids: every completed, open,
    undecided session whose code is not held. A held code (the guesser test, or any check that
    holds it) is never approved automatically; a researcher may approve it by naming it."""
    connection = connected(study)
    sessions = StudySession.objects.filter(study=study, completed_at__isnull=False, closed_at__isnull=True)
    sessions = sessions.select_related("worker")
    if session_ids is None or automatic:
        # Undecided, or an approval still queued (sent without the market's answer, or not sent for
        # a network failure): approving twice is harmless on both markets.
        queued = Q(market_review__decision=ReviewDecision.APPROVE, market_review__state=ReviewState.SENT)
        sessions = sessions.filter(money_may_go(), worker__is_excluded=False).filter(
            Q(market_review__isnull=True) | queued
        )
    if session_ids is not None:
        sessions = sessions.filter(pk__in=[int(pk) for pk in session_ids])
    taken, skipped = _take_for_review(list(sessions), ReviewDecision.APPROVE, reason="", by=by, automatic=automatic)
    outcome = ReviewOutcome(skipped=skipped)
    if not taken:
        return outcome
    calls: list[MarketCall] = []
    client = client_for(connection, by, calls)
    by_session = {review.study_session_id: review for review in taken}
    chosen = {s.pk: s for s in sessions if s.pk in by_session}
    if isinstance(client, ProlificClient):
        for start in range(0, len(taken), PROLIFIC_BULK_MAX):
            part = taken[start : start + PROLIFIC_BULK_MAX]
            ids = [chosen[r.study_session_id].worker.external_id for r in part]
            _send_reviews(outcome, part, calls, partial(client.approve, connection.market_study_id, ids))
        return outcome
    for review in taken:
        session = chosen[review.study_session_id]
        _send_reviews(outcome, [review], calls, partial(client.approve, session.external_session_id))
    return outcome


def _send_reviews(
    outcome: ReviewOutcome, reviews: list[SessionReview], calls: list[MarketCall], send: Callable[[], object]
) -> None:
    """Ask the market for these reviews' decision (`send()`, one call); count them in `outcome` as
    confirmed, refused (marked failed: they may be sent again) or unanswered (left sent)."""
    try:
        send()
    except MarketTimeout:
        outcome.unanswered += len(reviews)
        return
    except MarketError as error:
        if not _refused_outright(error):
            # No connection, the market's own error, its rate limit: nothing was refused. The
            # reviews stay queued (sent) with the failed call as their reason, and the next
            # approval or the beat (retry_queued_approvals) sends them again.
            SessionReview.objects.filter(pk__in=[r.pk for r in reviews]).update(
                call=calls[-1] if calls else None, updated_at=_now()
            )
            outcome.unanswered += len(reviews)
            outcome.errors.append(str(error))
            return
        _finish_reviews(reviews, ReviewState.FAILED, calls[-1] if calls else None)
        outcome.failed += len(reviews)
        outcome.errors.append(str(error))
        return
    _finish_reviews(reviews, ReviewState.CONFIRMED, calls[-1] if calls else None)
    outcome.confirmed += len(reviews)


def retry_queued_approvals(connection: MarketConnection) -> ReviewOutcome:
    """Send again the approvals that are queued: sent without the market's answer, or not sent for a
    network failure (the beat's markets.approve_checked_sessions asks every connection)."""
    queued = list(
        SessionReview.objects.filter(
            study_session__study=connection.study, decision=ReviewDecision.APPROVE, state=ReviewState.SENT
        ).values_list("study_session_id", flat=True)
    )
    if not queued:
        return ReviewOutcome()
    return approve_sessions(connection.study, queued)


def reject_session(session: StudySession, reason: str, *, category: str = "OTHER", by: Any = None) -> ReviewOutcome:
    """Reject one session on the market; only with a reason, which the participant reads."""
    reason = " ".join((reason or "").split())
    if not reason:
        raise ConnectionRefused("A rejection needs a reason: the participant reads it.")
    if category not in dict(REJECTION_CATEGORIES):
        raise ConnectionRefused("Choose one of Prolific's rejection categories.")
    connection = connected(session.study)
    taken, skipped = _take_for_review([session], ReviewDecision.REJECT, reason=reason, by=by, automatic=False)
    outcome = ReviewOutcome(skipped=skipped)
    if not taken:
        return outcome
    calls: list[MarketCall] = []
    client = client_for(connection, by, calls)
    if isinstance(client, ProlificClient):
        _send_reviews(outcome, taken, calls, partial(client.reject, session.external_session_id, reason, category))
    else:
        _send_reviews(outcome, taken, calls, partial(client.reject, session.external_session_id, reason))
    return outcome


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
    """The market confirmed these payments: mark them paid and write the ledger's `paid` rows, in one
    transaction. Idempotent: rows already paid are left alone (a reconcile and a payer may both
    confirm one batch)."""
    outcome = PaymentOutcome()
    with transaction.atomic():
        rows = list(
            BonusPayment.objects.select_for_update()
            .filter(pk__in=payment_ids)
            .exclude(state=PaymentState.PAID)
            .order_by("pk")
        )
        if not rows:
            return outcome
        now = _now()
        BonusPayment.objects.filter(pk__in=[r.pk for r in rows]).update(
            state=PaymentState.PAID, confirmed_at=now, last_error=""
        )
        result = bonuses.mark_paid(
            study, [r.earned_id for r in rows], by=by if getattr(by, "pk", None) else None, confirmed_by_market=True
        )
    outcome.paid = result["paid"]
    outcome.amount = result["amount"]
    return outcome


def _release_payments(payment_ids: list[int], error: str) -> None:
    """Nothing was paid for these (the market refused, or nothing was sent): they may be paid again."""
    BonusPayment.objects.filter(pk__in=payment_ids).exclude(state=PaymentState.PAID).update(
        state=PaymentState.REFUSED, last_error=error[:300]
    )


def _refused_outright(error: MarketError) -> bool:
    """A 4xx other than the rate limit: the market did nothing. A time-out, no connection or the
    market's own error (5xx) may hide a payment made."""
    return error.status is not None and 400 <= error.status < 500 and error.status != 429


def _pay_failed(outcome: PaymentOutcome, payment_ids: list[int], error: MarketError) -> bool:
    """A pay call that failed. Refused outright (_refused_outright: the market paid nothing) frees
    the rows, and answers True; anything else leaves them sent until the market's record settles
    them."""
    if error.status is not None and 400 <= error.status < 500 and error.status != 429:
        _release_payments(payment_ids, str(error))
        outcome.refused += len(payment_ids)
        outcome.errors.append(str(error))
        return True
    BonusPayment.objects.filter(pk__in=payment_ids).update(last_error=str(error)[:300])
    outcome.waiting += len(payment_ids)
    return False


def _waiting_participants(connection: MarketConnection) -> set[int]:
    """On Prolific, the workers (ids) whose new bonuses wait, for the API payer and the payment
    files alike: those with a bonus held by a payer and not confirmed. The reconcile compares a
    participant's bonus total on Prolific with what the ledger paid before one bulk bonus, so no
    other money may reach them meanwhile. (MTurk names each bonus in its record: nobody waits.)"""
    if connection.market != ConnectedMarket.PROLIFIC:
        return set()
    return set(
        BonusPayment.objects.filter(
            connection=connection, state__in=[PaymentState.CLAIMED, PaymentState.SENT]
        ).values_list("earned__worker_id", flat=True)
    )


def _claim_owed(connection: MarketConnection) -> list[BonusPayment]:
    """Take the study's unpaid earned bonuses that no payer holds, under the connection's row lock
    (payers of one study queue here for a moment; the market calls happen after the commit)."""
    study = connection.study
    now = _now()
    with transaction.atomic():
        _lock_payers(connection)
        # Rows whose earlier API payer stopped before sending anything: free again. (A file's claim
        # has no lease: it holds until the researcher confirms or releases it.)
        BonusPayment.objects.filter(
            connection=connection,
            payer=Payer.API,
            state=PaymentState.CLAIMED,
            lease_until__lt=now,
            batch__isnull=True,
        ).update(state=PaymentState.REFUSED, last_error="Its payer stopped before sending; nothing was sent.")
        # The one 'owed' rule (a held session's bonuses wait for the hold's decision; a bonus a
        # payment file claimed is the researcher's to confirm or release).
        owed = list(selectors.owed_entries(study).order_by("pk"))
        waiting = _waiting_participants(connection)
        owed = [entry for entry in owed if entry.worker_id not in waiting]
        claimed = []
        for entry in owed:
            payment, created = BonusPayment.objects.get_or_create(
                earned=entry,
                defaults={
                    "connection": connection,
                    "request_token": f"nli-bonus-{entry.pk}",
                    "lease_until": _lease(),
                },
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
        if _refused_outright(error) and len(part) > 1:
            # One participant the market refuses must not stop the others' bonuses: each half is
            # created again (creating pays nothing) until the refused ones stand alone. Unbound
            # from the abandoned batch, with a fresh lease, a payer that dies here leaves them to
            # the lease's end (_claim_owed frees them).
            BonusPayment.objects.filter(pk__in=payment_ids).update(batch=None, lease_until=_lease())
            names = sorted(part)
            for half in (names[: len(names) // 2], names[len(names) // 2 :]):
                outcome.add(_pay_one_bulk(connection, {pid: part[pid] for pid in half}, by))
            return outcome
        if _refused_outright(error):
            BonusPayment.objects.filter(pk__in=payment_ids).exclude(state=PaymentState.PAID).update(
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
        if _pay_failed(outcome, payment_ids, error):  # refused outright: nothing of this bulk bonus was paid
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
        BonusPayment.objects.filter(pk=payment.pk).update(
            state=PaymentState.SENT, sent_at=_now(), attempts=payment.attempts + 1, lease_until=_lease()
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
        _pay_failed(outcome, [payment.pk], error)  # waits: these have no status
        return outcome
    except MarketError as error:
        if "UniqueRequestToken" in str(error) or "already" in str(error).lower():
            # MTurk has this token: an earlier attempt went through. Its record decides.
            return _reconcile_mturk_payment(connection, client, payment, by, resend=False)
        _pay_failed(outcome, [payment.pk], error)
        return outcome
    return _confirm_payments(connection.study, [payment.pk], by)


def _reconcile_mturk_payment(
    connection: MarketConnection, client: MTurkClient, payment: BonusPayment, by: Any, *, resend: bool
) -> PaymentOutcome:
    """MTurk's ListBonusPayments is the record: our tag there means paid; absent, the same token is
    sent again (MTurk pays one bonus per UniqueRequestToken)."""
    outcome = PaymentOutcome()
    tag = f"[bonus {payment.earned_id}]"
    try:
        listed = client.bonus_payments(payment.earned.study_session.external_session_id)
    except MarketError as error:
        BonusPayment.objects.filter(pk=payment.pk).update(last_error=str(error)[:300])
        outcome.waiting += 1
        return outcome
    if any(tag in str(row.get("Reason", "")) for row in listed):
        return _confirm_payments(connection.study, [payment.pk], by)
    if not resend:
        outcome.waiting += 1
        return outcome
    BonusPayment.objects.filter(pk=payment.pk).update(attempts=payment.attempts + 1, lease_until=_lease())
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
        try:
            submissions = client.submissions(connection.market_study_id)
        except MarketError as error:
            outcome.waiting += sum(batch.payments.count() for batch in paying)
            outcome.errors.append(str(error))
            return outcome
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
        BonusPayment.objects.filter(connection=connection, state=PaymentState.SENT, lease_until__lt=mturk_before)
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
    and nothing is freed while Prolific cannot be asked (ConnectionRefused). Returns how many rows
    were freed."""
    asked = reconcile_payments(batch.connection, by=by)
    if asked.errors:
        raise ConnectionRefused(
            f"Prolific could not be asked whether it paid this bulk bonus ({asked.errors[0]}): nothing was freed."
        )
    with transaction.atomic():
        locked = BonusBatch.objects.select_for_update().get(pk=batch.pk)
        if locked.state != BatchState.PAYING:
            return 0
        locked.state = BatchState.ABANDONED
        locked.save(update_fields=["state"])
        ids = list(locked.payments.exclude(state=PaymentState.PAID).values_list("pk", flat=True))
        _release_payments(ids, "A researcher found on Prolific that this bulk bonus was not paid.")
    return len(ids)


# --- payers by hand: payment files paid on the market's website --------------------------------
# A study with a connection has two payers, the API (the pay button) and a researcher paying a
# file on the market's website; both take bonuses through the one 'owed' rule
# (selectors.owed_entries) under the connection's row lock, so neither lists, sends or marks paid
# a bonus the other holds. A study without a connection has no API payer: its files and its
# "mark paid" are the ledger's alone.

HAND_RELEASED = "Released by a researcher: the payment file was not paid."


def _lock_payers(connection: MarketConnection) -> None:
    """The lock every payer of one study queues on (in the caller's transaction)."""
    MarketConnection.objects.select_for_update().get(pk=connection.pk)


def claim_for_file(study: Study, file: str) -> list[BonusEntry]:
    """The rows of one payment file ("prolific", "mturk" or "left-out", quality.bonuses.file_of).
    With a connection, downloading the Prolific or MTurk file claims what it lists: the owed rows
    for it, and the rows earlier downloads claimed and nobody confirmed or released (the same file
    downloaded again lists them again). The API payer respects these claims until the researcher
    confirms (mark_paid_by_hand) or releases them (release_file_claims). The left-out file lists
    what no market file pays and claims nothing."""
    if file not in bonuses.PAYMENT_FILES:
        raise ValueError(f"Payment files: {', '.join(bonuses.PAYMENT_FILES)}.")
    connection = connection_of(study)
    if connection is None or file == "left-out":
        listed = bonuses.unpaid(study) if connection is None else selectors.owed_entries(study)
        return [entry for entry in listed if bonuses.file_of(entry) == file]
    with transaction.atomic():
        _lock_payers(connection)
        waiting = _waiting_participants(connection)
        for entry in selectors.owed_entries(study):
            if bonuses.file_of(entry) != file or entry.worker_id in waiting:
                continue
            BonusPayment.objects.update_or_create(
                earned=entry,
                defaults={
                    "connection": connection,
                    "state": PaymentState.CLAIMED,
                    "payer": Payer.FILE,
                    "batch": None,
                    "lease_until": _now(),
                    "last_error": "",
                },
                create_defaults={
                    "connection": connection,
                    "state": PaymentState.CLAIMED,
                    "payer": Payer.FILE,
                    "request_token": f"nli-bonus-{entry.pk}",
                    "lease_until": _now(),
                },
            )
        return [entry for entry in selectors.held_by_files(study) if bonuses.file_of(entry) == file]


def mark_paid_by_hand(study: Study, earned_ids: Iterable[int | str], *, by: Any = None) -> dict[str, Any]:
    """A researcher paid these bonuses on the market's website: the ledger's paid rows and the
    payers' record, in one transaction (quality.bonuses.mark_paid's checks and answer). Refused as
    a whole (bonuses.PaymentRefused) when the API payer holds any of them: the market may be paying
    them right now, and the page that listed them was older than that payment."""
    connection = connection_of(study)
    if connection is None:
        return bonuses.mark_paid(study, earned_ids, by=by)
    ids = sorted({int(pk) for pk in earned_ids})
    with transaction.atomic():
        _lock_payers(connection)
        in_flight = BonusPayment.objects.filter(
            earned_id__in=ids, payer=Payer.API, state__in=[PaymentState.CLAIMED, PaymentState.SENT]
        ).count()
        if in_flight:
            raise bonuses.PaymentRefused(
                f"{in_flight} of these bonus(es) are being paid through the market's API: nothing was marked "
                "paid. Reload the page: it lists only the bonuses no other payer holds."
            )
        result = bonuses.mark_paid(study, ids, by=by if getattr(by, "pk", None) else None)
        now = _now()
        existing = set(BonusPayment.objects.filter(earned_id__in=ids).values_list("earned_id", flat=True))
        BonusPayment.objects.filter(earned_id__in=ids).exclude(state=PaymentState.PAID).update(
            state=PaymentState.PAID, payer=Payer.FILE, confirmed_at=now, last_error=""
        )
        BonusPayment.objects.bulk_create(
            [
                BonusPayment(
                    earned_id=pk,
                    connection=connection,
                    state=PaymentState.PAID,
                    payer=Payer.FILE,
                    request_token=f"nli-bonus-{pk}",
                    lease_until=now,
                    confirmed_at=now,
                )
                for pk in ids
                if pk not in existing
            ]
        )
    return result


def release_set_aside(study: Study) -> int:
    """The researcher fixed what the market refused (a participant id, say): the set-aside bonuses
    are owed again and the next press tries them. Returns how many were released."""
    connection = connected(study)
    with transaction.atomic():
        _lock_payers(connection)
        return BonusPayment.objects.filter(connection=connection, state=PaymentState.ASIDE).update(
            state=PaymentState.REFUSED, last_error="Released by a researcher to be tried again."
        )


def release_file_claims(study: Study) -> int:
    """A researcher did not pay the downloaded file: its bonuses are owed again (the API payer or a
    later file may take them). Returns how many were released."""
    connection = connected(study)
    with transaction.atomic():
        _lock_payers(connection)
        return BonusPayment.objects.filter(connection=connection, payer=Payer.FILE, state=PaymentState.CLAIMED).update(
            state=PaymentState.REFUSED, last_error=HAND_RELEASED
        )


# --- events from the market ------------------------------------------------------------------


class WebhookRefused(Exception):
    """A webhook that is not acted on; `status` is the HTTP answer."""

    def __init__(self, message: str, status: int = 403):
        super().__init__(message)
        self.status = status


def prolific_signature(secret: str, timestamp: str, body: bytes) -> str:
    """Prolific's signature: base64 of HMAC-SHA256 over the timestamp followed by the body."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


# Unix seconds have 10 digits until the year 2286; a longer "timestamp" is not one (and int() of
# thousands of digits is refused by Python itself).
WEBHOOK_TIMESTAMP_MAX_DIGITS = 12
# A timestamp further from now than this is no clock's skew and no delayed delivery: malformed
# input (400), not a replay to weigh against MARKET_WEBHOOK_TOLERANCE_SECONDS (403).
WEBHOOK_TIMESTAMP_RANGE = timedelta(days=1)


def _webhook_sent_at(timestamp: str) -> datetime:
    """The moment a webhook's timestamp header names; WebhookRefused (400) for anything that is not a
    Unix time in whole seconds within a day of now (exponents, signs, fractions, non-ASCII digits,
    dates no clock sends)."""
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= WEBHOOK_TIMESTAMP_MAX_DIGITS):
        raise WebhookRefused("The timestamp must be a Unix time in whole seconds (ASCII digits only).", status=400)
    now = _now()
    seconds = int(timestamp)
    if abs(seconds - now.timestamp()) > WEBHOOK_TIMESTAMP_RANGE.total_seconds():
        raise WebhookRefused(
            f"The timestamp {timestamp} is out of range: more than a day from the server's clock.", status=400
        )
    return datetime.fromtimestamp(seconds, tz=UTC)


def receive_prolific_webhook(webhook_key: str, body: bytes, timestamp: str, signature: str) -> str:
    """Verify and act on one Prolific webhook; returns what was done, or raises WebhookRefused.

    Refused: an unknown hook address, a missing or wrong signature (compared byte for byte), a
    timestamp that is not a Unix time within a day of now (400), a timestamp outside
    MARKET_WEBHOOK_TOLERANCE_SECONDS, a signature seen before (a replay)."""
    connection = MarketConnection.objects.filter(webhook_key=webhook_key, market=ConnectedMarket.PROLIFIC).first()
    if connection is None:
        raise WebhookRefused("Unknown webhook address.", status=404)
    try:
        secret = unseal_text(connection.sealed_webhook_secret)
    except SealingUnavailable as error:
        raise WebhookRefused("The webhook secret cannot be read.", status=503) from error
    if not secret:
        raise WebhookRefused("No webhook secret is set for this connection.")
    if not (timestamp and signature):
        raise WebhookRefused("Missing signature or timestamp.")
    sent_at = _webhook_sent_at(timestamp)
    expected = prolific_signature(secret, timestamp, body)
    # Exactly the bytes that were signed: a header "normalised" first (stripped of a trailing
    # no-break space, say) would be a second spelling of one signature, and the replay guard
    # below remembers spellings.
    if not hmac.compare_digest(expected.encode("ascii"), signature.encode("utf-8", "surrogatepass")):
        raise WebhookRefused("Bad signature.")
    if abs((_now() - sent_at).total_seconds()) > settings.MARKET_WEBHOOK_TOLERANCE_SECONDS:
        raise WebhookRefused("Stale timestamp: refused as a possible replay.")
    try:
        event = json.loads(body)
    except (ValueError, RecursionError) as error:  # RecursionError: arrays nested thousands deep
        raise WebhookRefused("The body is not JSON.", status=400) from error
    if not isinstance(event, dict):
        raise WebhookRefused("The body is not a JSON object.", status=400)
    event_type = str(event.get("event_type", ""))[:60]
    resource_id = str(event.get("resource_id", ""))[:128]
    status = str(event.get("status", "")).upper()[:40]
    try:
        with transaction.atomic():
            delivery = WebhookDelivery.objects.create(
                connection=connection,
                signature=hashlib.sha256(signature.encode()).hexdigest(),
                sent_at=sent_at,
                event_type=event_type,
                resource_id=resource_id,
                status=status,
            )
            outcome = _act_on_submission_event(connection, event) if event_type == "submission.status.change" else ""
            delivery.outcome = (outcome or "nothing to do")[:300]
            delivery.save(update_fields=["outcome"])
    except IntegrityError as error:
        raise WebhookRefused("Replayed webhook: already received.", status=409) from error
    return delivery.outcome


def _act_on_submission_event(connection: MarketConnection, event: dict[str, Any]) -> str:
    status = str(event.get("status", "")).upper()
    submission_id = str(event.get("resource_id", ""))
    # Matched by the submission alone: Prolific sends a workspace's events to every subscription,
    # so the participant's id could name their visit to another study.
    session = (
        StudySession.objects.select_for_update()
        .filter(study=connection.study, external_session_id=submission_id)
        .first()
    )
    if session is None:
        return f"No session of this study for submission {submission_id}."
    if status == "APPROVED":
        SessionReview.objects.filter(study_session=session, decision=ReviewDecision.APPROVE).update(
            state=ReviewState.CONFIRMED
        )
        return f"Session {session.pk} approved on Prolific."
    if status not in ENDING_STATUSES:
        return f"Session {session.pk}: status {status} noted."
    return close_session(session, f"{ENDING_STATUSES[status]} on Prolific")


def close_session(session: StudySession, reason: str) -> str:
    """The market ended this visit: it takes no more tasks, and its open claims go back to the pool
    now rather than when they expire. In the caller's transaction."""
    released = release_open_claims_of_session(session)
    if session.closed_at is None:
        StudySession.objects.filter(pk=session.pk).update(closed_at=_now(), closed_reason=reason[:200])
    return f"Session {session.pk} {reason}: closed, {released} claim(s) released."


def poll_mturk(connection: MarketConnection) -> str:
    """MTurk's polling (ListAssignmentsForHIT for each HIT the study's open sessions came from):
    rejected assignments close their sessions and free their claims; approvals are noted."""
    sessions = StudySession.objects.filter(study=connection.study, closed_at__isnull=True).exclude(external_study_id="")
    hits = sorted(set(sessions.values_list("external_study_id", flat=True)))
    if not hits:
        return "No open MTurk sessions."
    client = client_for(connection)
    assert isinstance(client, MTurkClient)
    closed = approved = 0
    for hit_id in hits:
        try:
            assignments = client.assignments_for_hit(hit_id)
        except MarketError as error:
            return f"Polling stopped: {error}"
        status_of = {a.get("AssignmentId"): a.get("AssignmentStatus") for a in assignments}
        for session in sessions.filter(external_study_id=hit_id):
            status = status_of.get(session.external_session_id)
            if status == "Rejected":
                with transaction.atomic():
                    locked = StudySession.objects.select_for_update().get(pk=session.pk)
                    close_session(locked, "rejected on MTurk")
                closed += 1
            elif status == "Approved":
                approved += SessionReview.objects.filter(study_session=session, decision=ReviewDecision.APPROVE).update(
                    state=ReviewState.CONFIRMED
                )
    return f"Polled {len(hits)} HIT(s): {closed} session(s) closed, {approved} approval(s) confirmed."


# --- lists -----------------------------------------------------------------------------------


def sync_lists(connection: MarketConnection, *, by: Any = None) -> str:
    """Put workers who passed the study's qualification test on the qualified list and excluded
    workers on the excluded list (a Prolific participant group, an MTurk qualification type), once
    each: the market then keeps them in or out of later studies."""
    study = connection.study
    market = Market.PROLIFIC if connection.market == ConnectedMarket.PROLIFIC else Market.MTURK
    wanted = {
        ListKind.QUALIFIED: (
            connection.qualified_list_id,
            Worker.objects.filter(
                pk__in=QualificationAttempt.objects.filter(test__study=study, passed=True).values("worker_id"),
                is_excluded=False,
            ),
        ),
        ListKind.EXCLUDED: (
            connection.excluded_list_id,
            Worker.objects.filter(is_excluded=True, study_sessions__study=study),
        ),
    }
    client = client_for(connection, by)
    lines = []
    for kind, (list_id, workers) in wanted.items():
        if not list_id:
            continue
        new = list(
            workers.filter(market=market)
            .exclude(external_id="")
            .exclude(market_list_entries__connection=connection, market_list_entries__kind=kind)
            .distinct()
            .order_by("pk")
        )
        if not new:
            lines.append(f"{kind}: nobody new")
            continue
        try:
            if isinstance(client, ProlificClient):
                client.add_to_group(list_id, [w.external_id for w in new])
            else:
                for worker in new:
                    client.qualify(list_id, worker.external_id)
        except MarketError as error:
            lines.append(f"{kind}: {error}")
            continue
        ListEntry.objects.bulk_create(
            [ListEntry(connection=connection, worker=w, kind=kind) for w in new], ignore_conflicts=True
        )
        lines.append(f"{kind}: {len(new)} added")
    return "; ".join(lines) or "No list ids are set for this connection."
