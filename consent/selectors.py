"""Reads of the consent app: a study's current sheet, whether a visit may be given a task, withdrawals."""

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse

from crowd.access import Refusal
from crowd.models import Study, StudySession

from .models import ConsentAnswer, ConsentDecision, InformationSheet, Withdrawal

# A researcher's preview agrees in the browser's Django session, never in the database (the
# preview rolls back every write): {study pk: sheet version agreed}.
PREVIEW_AGREED_KEY = "consent_preview_agreed"

WITHDRAWN_MESSAGE = (
    "You have withdrawn from this study, so it gives you no more tasks. Thank you for your time. "
    "Please return the study on the crowd platform."
)


def current_sheet(study: Study) -> InformationSheet | None:
    """The study's newest information sheet, the one a participant who has not answered yet reads."""
    return InformationSheet.objects.filter(study=study).order_by("-version").first()


def decision_of(study_session: StudySession) -> ConsentDecision | None:
    return ConsentDecision.objects.filter(study_session=study_session).select_related("sheet").first()


def withdrawal_policy(study: Study) -> str:
    """What the study does with a withdrawn participant's contributions (its setting on New study)."""
    return str(study.contributions_on_withdrawal)


def consent_refusal(request: HttpRequest, study_session: StudySession) -> Refusal | None:
    """None when this visit may be given a task as far as consent goes, else the Refusal to follow
    (the sheet, the page for those who declined) or show (withdrawn). Every task door asks it
    through crowd.registry (task pages, the qualification test). A study without a sheet asks for
    no consent; a visit the market closed is crowd's to refuse."""
    if study_session.closed_at is not None:
        if Withdrawal.objects.filter(study_session=study_session).exists():
            return Refusal(WITHDRAWN_MESSAGE, title="You have withdrawn")
        return None
    slug = study_session.study.slug
    if study_session.is_preview:
        sheet = current_sheet(study_session.study)
        agreed = request.session.get(PREVIEW_AGREED_KEY, {}).get(str(study_session.study_id))
        if sheet is None or agreed == sheet.version:
            return None
        return Refusal(url=reverse("consent:sheet", kwargs={"slug": slug}))
    answer = ConsentDecision.objects.filter(study_session=study_session).values_list("answer", flat=True).first()
    if answer == ConsentAnswer.AGREED:
        return None
    if answer == ConsentAnswer.DECLINED:
        return Refusal(url=reverse("consent:declined", kwargs={"slug": slug}))
    if not InformationSheet.objects.filter(study_id=study_session.study_id).exists():
        return None
    return Refusal(url=reverse("consent:sheet", kwargs={"slug": slug}))


def study_withdrawals(study: Study) -> QuerySet[Withdrawal]:
    """The study's withdrawals, newest first, for its page."""
    return (
        Withdrawal.objects.filter(study_session__study=study)
        .select_related("study_session__worker")
        .order_by("-withdrawn_at")
    )


def consent_counts(study: Study) -> dict[str, int]:
    """How many visits agreed and declined (the study page)."""
    rows = ConsentDecision.objects.filter(study_session__study=study, study_session__is_preview=False)
    return rows.aggregate(
        agreed=Count("pk", filter=Q(answer=ConsentAnswer.AGREED)),
        declined=Count("pk", filter=Q(answer=ConsentAnswer.DECLINED)),
    )


@dataclass(frozen=True)
class ConsentOverview:
    """The study page's consent section: the current sheet, how many visits agreed and declined
    (`consent_counts`), and the withdrawals, newest first (`study_withdrawals`)."""

    sheet: InformationSheet | None
    counts: dict[str, int]
    withdrawals: list[Withdrawal]
