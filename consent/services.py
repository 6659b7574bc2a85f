"""Writes of the consent app: a study's sheet versions, a visit's answer, a withdrawal (docs/consent.md)."""

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from corpus.models import Market
from crowd.models import ContributionsOnWithdrawal, SessionEnding, Study, StudySession
from crowd.registry import release_open_claims_of_session

from . import selectors
from .models import ConsentAnswer, ConsentDecision, InformationSheet, RemovalState, Withdrawal
from .registry import contribution_remover


class SheetChanged(Exception):
    """The sheet a participant answered is no longer the study's current one."""


class NoSheet(Exception):
    """The study asks for no consent: it has no information sheet."""


def save_information_sheet(
    study: Study, text: str, statements: list[str], *, user: Any = None
) -> InformationSheet | None:
    """The study's sheet as the lab edited it: a new version when text or statements changed (the
    visits that answered an earlier version keep theirs), None when nothing changed. The study's
    row is locked so two saves never make one version twice."""
    text = text.strip()
    statements = [line.strip() for line in statements if line.strip()]
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        current = selectors.current_sheet(study)
        if current is not None and current.text == text and current.statements == statements:
            return None
        return InformationSheet.objects.create(
            study=study,
            version=(current.version + 1) if current is not None else 1,
            text=text,
            statements=statements,
            created_by=user if isinstance(user, User) else None,
        )


def answer_sheet(study_session: StudySession, *, version: int, agreed: bool) -> ConsentDecision:
    """Record the visit's answer to the sheet version it was shown; a second answer (a double click, a
    second tab) changes nothing. Raises SheetChanged when the shown version is no longer the current
    one (the participant reads the new one first), NoSheet when the study has none."""
    with transaction.atomic():
        StudySession.objects.select_for_update().filter(pk=study_session.pk).first()
        earlier = selectors.decision_of(study_session)
        if earlier is not None:
            return earlier
        current = selectors.current_sheet(study_session.study)
        if current is None:
            raise NoSheet
        if current.version != version:
            raise SheetChanged
        return ConsentDecision.objects.create(
            study_session=study_session,
            sheet=current,
            answer=ConsentAnswer.AGREED if agreed else ConsentAnswer.DECLINED,
            decided_at=timezone.now(),
        )


WITHDRAWN_REASON = "Withdrawn by the participant"
MARKET_NOT_TOLD: dict[str, str] = {
    Market.PROLIFIC: "market not told: no API (Prolific has no call that withdraws a participant; "
    "they return the submission themselves)",
    Market.MTURK: "market not told: no API (MTurk has no call that returns an assignment for the worker; "
    "they return the HIT themselves)",
}


def withdraw(study_session: StudySession) -> Withdrawal:
    """The participant withdraws from the study in this visit, in one transaction: their open claims
    released (no one else's), the visit closed, their contributions kept or removed as the study's
    policy says. A second call returns the first withdrawal."""
    with transaction.atomic():
        locked = (
            StudySession.objects.select_for_update(of=("self",))
            .select_related("study", "worker")
            .get(pk=study_session.pk)
        )
        earlier = Withdrawal.objects.filter(study_session=locked).first()
        if earlier is not None:
            return earlier
        now = timezone.now()
        released = release_open_claims_of_session(locked)
        if locked.closed_at is None:
            StudySession.objects.filter(pk=locked.pk).update(
                closed_at=now, ended_as=SessionEnding.WITHDRAWN, closed_reason=WITHDRAWN_REASON
            )
        policy = selectors.withdrawal_policy(locked.study)
        withdrawal = Withdrawal.objects.create(
            study_session=locked,
            withdrawn_at=now,
            policy=policy,
            claims_released=released,
            removal=RemovalState.NOT_ASKED if policy == ContributionsOnWithdrawal.KEEP else RemovalState.WAITING,
            market_note=MARKET_NOT_TOLD.get(locked.worker.market, "market not told: not a market participant"),
        )
        if policy == ContributionsOnWithdrawal.DELETE:
            remove_withdrawn_contributions(withdrawal)
        return withdrawal


def remove_withdrawn_contributions(withdrawal: Withdrawal) -> bool:
    """Remove a deleting withdrawal's contributions with the registered engine (consent.registry),
    in the caller's transaction; False, the withdrawal left waiting, when no engine is registered."""
    remover = contribution_remover()
    if remover is None or withdrawal.removal == RemovalState.DONE:
        return False
    note = remover(withdrawal.study_session)
    withdrawal.removal = RemovalState.DONE
    withdrawal.removal_note = note[:300]
    withdrawal.removed_at = timezone.now()
    withdrawal.save(update_fields=["removal", "removal_note", "removed_at"])
    return True
