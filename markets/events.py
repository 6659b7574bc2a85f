"""What the market tells us: Prolific's signed webhooks and MTurk's polled assignments. A
visit the market ended is closed and its open claims go back to the pool."""

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from crowd.models import SessionEnding, StudySession
from crowd.registry import release_open_claims_of_session

from .clients import MarketError
from .clients.mturk import MTurkClient
from .connections import client_for
from .models import ConnectedMarket, MarketConnection, ReviewDecision, ReviewState, SessionReview, WebhookDelivery
from .sealing import SealingUnavailable, unseal_text

ENDING_STATUSES = {
    "RETURNED": SessionEnding.RETURNED,
    "TIMED-OUT": SessionEnding.TIMED_OUT,
    "REJECTED": SessionEnding.REJECTED,
}


def _now() -> datetime:
    return timezone.now()


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
    ending = ENDING_STATUSES[status]
    return close_session(session, ending, f"{ending.label} on Prolific")


def close_session(session: StudySession, ending: SessionEnding, reason: str) -> str:
    """The market ended this visit: it takes no more tasks, and its open claims go back to the pool
    now rather than when they expire. In the caller's transaction."""
    released = release_open_claims_of_session(session)
    if session.closed_at is None:
        StudySession.objects.filter(pk=session.pk).update(closed_at=_now(), ended_as=ending, closed_reason=reason[:200])
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
                    close_session(locked, SessionEnding.REJECTED, "rejected on MTurk")
                closed += 1
            elif status == "Approved":
                approved += SessionReview.objects.filter(study_session=session, decision=ReviewDecision.APPROVE).update(
                    state=ReviewState.CONFIRMED
                )
    return f"Polled {len(hits)} HIT(s): {closed} session(s) closed, {approved} approval(s) confirmed."
