"""A participant's pages of the consent app: the information sheet, the page for those who decline,
and withdrawal. Thin: the rules live in services.py and selectors.py."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from corpus.models import Market
from crowd.access import Refusal
from crowd.arrival import current_study_session
from crowd.models import Study, StudySession
from crowd.registry import next_task_url

from . import selectors, services
from .models import ConsentAnswer, InformationSheet
from .rendering import sheet_html

# The Django session's note of the visit that withdrew in this browser: the quiet link is not shown again.
WITHDRAWN_KEY = "consent_withdrawn_session"
SHEET_CHANGED = "The information sheet was changed while you read it. Please read this version before you answer."


def _refused(request: HttpRequest, message: str, title: str, status: int) -> HttpResponse:
    return render(request, "crowd/not_admitted.html", {"refusal": Refusal(message, title=title)}, status=status)


def _visit_of(request: HttpRequest, study: Study) -> StudySession | None:
    session = current_study_session(request)
    return session if session is not None and session.study_id == study.pk else None


def _not_in_study(request: HttpRequest) -> HttpResponse:
    return _refused(
        request, "Please open this study from its link on the crowd platform.", "Open the study from its link", 400
    )


def _sheet_page(
    request: HttpRequest, study: Study, sheet: InformationSheet, *, status: int = 200, answered: bool = False
) -> HttpResponse:
    context = {"study": study, "sheet": sheet, "sheet_html": sheet_html(sheet.text), "answered": answered}
    return render(request, "consent/sheet.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def sheet(request: HttpRequest, slug: str) -> HttpResponse:
    """The study's information sheet, before the first task (the qualification test included):
    agree (the visit's tasks follow) or decline (how to return the study). A POST states the
    version it answers, so an edit made meanwhile is read before it is agreed to."""
    study = get_object_or_404(Study, slug=slug)
    visit = _visit_of(request, study)
    if visit is None:
        return _not_in_study(request)
    decision = selectors.decision_of(visit)
    if decision is not None:
        if decision.answer == ConsentAnswer.DECLINED:
            return redirect("consent:declined", slug=study.slug)
        # The version they agreed to, as they read it, for them to read again.
        return _sheet_page(request, study, decision.sheet, answered=True)
    current = selectors.current_sheet(study)
    if current is None or visit.closed_at is not None:
        return redirect(next_task_url(study.task_kind))  # nothing to agree to, or the task door refuses
    if request.method == "GET":
        return _sheet_page(request, study, current)
    answer = request.POST.get("answer")
    version = request.POST.get("version", "")
    if answer not in ("agree", "decline") or not version.isascii() or not version.isdigit() or len(version) > 9:
        messages.error(request, "Please answer with one of the two buttons below.")
        return _sheet_page(request, study, current, status=400)
    if visit.is_preview:
        # Nothing of a preview is saved: its answer lives in this browser's session alone.
        if int(version) != current.version:
            messages.info(request, SHEET_CHANGED)
            return _sheet_page(request, study, current, status=409)
        if answer == "decline":
            return redirect("consent:declined", slug=study.slug)
        agreed = dict(request.session.get(selectors.PREVIEW_AGREED_KEY, {}))
        agreed[str(study.pk)] = current.version
        request.session[selectors.PREVIEW_AGREED_KEY] = agreed
        return redirect(next_task_url(study.task_kind))
    try:
        decision = services.answer_sheet(visit, version=int(version), agreed=answer == "agree")
    except services.SheetChanged:
        messages.info(request, SHEET_CHANGED)
        return _sheet_page(request, study, current, status=409)
    except services.NoSheet:
        return redirect(next_task_url(study.task_kind))
    if decision.answer == ConsentAnswer.DECLINED:
        return redirect("consent:declined", slug=study.slug)
    return redirect(next_task_url(study.task_kind))


@login_required
def declined(request: HttpRequest, slug: str) -> HttpResponse:
    """How to leave the study on the market without consenting; the visit is never given a task."""
    study = get_object_or_404(Study, slug=slug)
    visit = _visit_of(request, study)
    if visit is None:
        return _not_in_study(request)
    decision = selectors.decision_of(visit)
    if not visit.is_preview and (decision is None or decision.answer != ConsentAnswer.DECLINED):
        return redirect("consent:sheet", slug=study.slug)
    context = {"study": study, "market": visit.worker.market, "markets": Market}
    return render(request, "consent/declined.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def withdraw(request: HttpRequest) -> HttpResponse:
    """Withdraw from the study of this visit: a GET asks (and says what happens to the answers
    given), the POST withdraws."""
    visit = current_study_session(request)
    if visit is None:
        return _refused(
            request,
            "This account is not taking part in a study here, so there is nothing to withdraw from. "
            "To stop, simply close this page.",
            "Not in a study",
            200,
        )
    withdrawn = getattr(visit, "withdrawal", None)
    context = {
        "study": visit.study,
        "market": visit.worker.market,
        "markets": Market,
        "policy": selectors.withdrawal_policy(visit.study),
        "preview": visit.is_preview,
    }
    if withdrawn is not None:
        return render(request, "consent/withdrawn.html", {**context, "withdrawal": withdrawn})
    if request.method == "GET":
        return render(request, "consent/withdraw.html", context)
    if visit.is_preview:
        # The preview rolls this request back: a participant's withdrawal is shown, nothing done.
        return render(request, "consent/withdrawn.html", context)
    withdrawal = services.withdraw(visit)
    request.session[WITHDRAWN_KEY] = visit.pk
    return render(request, "consent/withdrawn.html", {**context, "withdrawal": withdrawal})
