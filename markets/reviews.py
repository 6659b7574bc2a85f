"""Approvals and rejections of study sessions on the market, and their queue.

A review is written (one per session) before the market is asked. One the market never answered,
or that a network failure kept from it, stays queued (state `sent`) with its reason and is sent
again by the next press or the beat (`retry_queued_reviews`); one the market refused outright is
`failed`. docs/markets.md, "Approvals and rejections".
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit import services as audit
from corpus.selectors import excluded_in
from crowd.holds import decide_code_holds, money_may_go
from crowd.models import CodeHoldDecision, Study, StudySession

from .clients import MarketError, MarketTimeout
from .clients.prolific import ProlificClient
from .connections import PROLIFIC_BULK_MAX, ConnectionRefused, client_for, connected, refused_outright
from .models import MarketCall, MarketConnection, ReviewDecision, ReviewState, SessionReview

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


def _now() -> datetime:
    return timezone.now()


# --- approvals and rejections ----------------------------------------------------------------


@dataclass
class ReviewOutcome:
    confirmed: int = 0
    failed: int = 0
    unanswered: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def add(self, other: "ReviewOutcome") -> None:
        self.confirmed += other.confirmed
        self.failed += other.failed
        self.unanswered += other.unanswered
        self.skipped += other.skipped
        self.errors += other.errors

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
    sessions: Iterable[StudySession], decision: str, *, reason: str, by: Any, automatic: bool, category: str = ""
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
                    "category": category,
                    "automatic": automatic,
                    "decided_by": by if getattr(by, "pk", None) else None,
                },
            )
            if not created and (review.decision != decision or review.state == ReviewState.CONFIRMED):
                skipped += 1
                continue
            if created:
                audit.record(
                    f"review.{decision}",
                    actor=by,
                    subject=session,
                    team_id=session.study.team_id,
                    after={"decision": decision, "automatic": automatic},
                    reason=reason,
                )
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
        excluded = excluded_in([study.dataset.team_id])  # the study's team's exclusions
        sessions = (
            sessions.filter(money_may_go())
            .exclude(worker_id__in=excluded.values("worker_id"))
            .filter(Q(market_review__isnull=True) | queued)
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
    confirmed, refused (marked failed: they may be sent again) or unanswered (left queued)."""
    ids = [r.pk for r in reviews]
    SessionReview.objects.filter(pk__in=ids).update(attempts=F("attempts") + 1)
    try:
        send()
    except MarketError as error:
        if isinstance(error, MarketTimeout) or not refused_outright(error):
            # A time-out, no connection, the market's own error, its rate limit: nothing was
            # refused. The reviews stay queued (sent) with the failed call and its error as their
            # reason, and the next press or the beat (retry_queued_reviews) sends them again.
            SessionReview.objects.filter(pk__in=ids).update(
                call=calls[-1] if calls else None, last_error=str(error)[:300], updated_at=_now()
            )
            outcome.unanswered += len(reviews)
            outcome.errors.append(str(error))
            return
        SessionReview.objects.filter(pk__in=ids).update(last_error=str(error)[:300])
        _finish_reviews(reviews, ReviewState.FAILED, calls[-1] if calls else None)
        outcome.failed += len(reviews)
        outcome.errors.append(str(error))
        return
    SessionReview.objects.filter(pk__in=ids).update(last_error="")
    _finish_reviews(reviews, ReviewState.CONFIRMED, calls[-1] if calls else None)
    outcome.confirmed += len(reviews)


def retry_queued_reviews(connection: MarketConnection) -> ReviewOutcome:
    """Send again every queued review, approvals and rejections alike (the beat's
    markets.approve_checked_sessions asks every connection)."""
    outcome = retry_queued_approvals(connection)
    outcome.add(retry_queued_rejections(connection))
    return outcome


def retry_queued_rejections(connection: MarketConnection) -> ReviewOutcome:
    """Send again the rejections that are queued, each with the reason it was pressed with."""
    outcome = ReviewOutcome()
    queued = SessionReview.objects.filter(
        study_session__study=connection.study, decision=ReviewDecision.REJECT, state=ReviewState.SENT
    ).select_related("study_session__study")
    for review in queued.order_by("pk"):
        outcome.add(_send_rejection(connection, review, by=None))
    return outcome


def retry_queued_approvals(connection: MarketConnection) -> ReviewOutcome:
    """Send again the approvals that are queued: sent without the market's answer, or not sent for a
    network failure."""
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
    taken, skipped = _take_for_review(
        [session], ReviewDecision.REJECT, reason=reason, by=by, automatic=False, category=category
    )
    if not taken:
        return ReviewOutcome(skipped=skipped)
    return _send_rejection(connection, taken[0], by=by)


def _send_rejection(connection: MarketConnection, review: SessionReview, *, by: Any) -> ReviewOutcome:
    """Send one taken rejection with the reason and category it was pressed with. Sent again from
    the queue, a Prolific rejection is first looked up: one the market did before its answer was
    lost is confirmed, not sent twice."""
    outcome = ReviewOutcome()
    calls: list[MarketCall] = []
    client = client_for(connection, by, calls)
    submission = review.study_session.external_session_id
    if isinstance(client, ProlificClient):
        if review.attempts:
            try:
                status = str(client.submission(submission).get("status", "")).upper()
            except MarketError:
                status = ""  # not known: the rejection is sent again, and its answer decides
            if status == "REJECTED":
                _finish_reviews([review], ReviewState.CONFIRMED, calls[-1] if calls else None)
                outcome.confirmed += 1
                return outcome
        category = review.category or "OTHER"
        _send_reviews(outcome, [review], calls, partial(client.reject, submission, review.reason, category))
    else:
        _send_reviews(outcome, [review], calls, partial(client.reject, submission, review.reason))
    return outcome
