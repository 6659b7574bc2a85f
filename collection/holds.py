""" "More time" and "Get this line back" for a writing claim: `crowd.holds` decides; an expired line
comes back through `writing_claims.take_back_line` (its bounds, the premise's lock, a fresh count).
"""

import uuid

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from corpus.models import Worker
from crowd.claiming import excluded_from_claim
from crowd.holds import HoldRenewal, has_run_out, others_waiting, renew_hold, waits_its_turn
from crowd.models import ClaimStatus, StudySession

from . import writing_claims
from .models import WritingClaim


def claim_minutes(study_session: StudySession | None = None) -> int:
    """How long a writing hold lasts: the study's own claim minutes when set, else the server's."""
    study = study_session.study if study_session is not None else None
    if study is not None and study.claim_minutes:
        return int(study.claim_minutes)
    minutes: int = settings.NLI["WRITING_CLAIM_MINUTES"]
    return minutes


def waits_its_turn_for(worker: Worker, study_session: StudySession | None) -> bool:
    """Whether the worker's next line waits while others wait for work (`crowd.holds.waits_its_turn`:
    a line of theirs ran out unsent lately)."""
    now = timezone.now()
    live = writing_claims.WRITING_CLAIMS.live(now)
    return waits_its_turn(worker.pk, study_session, now, minutes=claim_minutes(study_session), live=live)


def renew_writing_hold(worker: Worker, token: uuid.UUID | str) -> HoldRenewal | None:
    """Renew the hold of the worker's writing claim; None when the claim is not theirs. One
    transaction, the worker's row locked first (their claims and renewals one at a time)."""
    now = timezone.now()
    with transaction.atomic():
        locked_worker = Worker.objects.select_for_update(no_key=True).filter(pk=worker.pk).first()
        claim = WritingClaim.objects.select_for_update(of=("self",)).filter(token=token, worker=worker).first()
        if locked_worker is None or claim is None:
            return None
        if claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED) or excluded_from_claim(locked_worker, claim):
            return HoldRenewal.GONE
        if not has_run_out([claim], now):
            # A live hold never asks whether its premise is free: it holds its place.
            live = writing_claims.WRITING_CLAIMS.live(now)
            minutes = claim_minutes(claim.study_session)
            return renew_hold(
                WritingClaim,
                [claim],
                now,
                minutes=minutes,
                items_free=lambda: False,
                others_wait=lambda: others_waiting([claim], worker.pk, now, minutes=minutes, live=live),
            )
        try:
            _, outcome = writing_claims.take_back_line(worker, claim.token)
        except writing_claims.ClaimAlreadySubmitted:
            return HoldRenewal.GONE
        return outcome
