"""The writing task's pages: the next premise, one writing task, and the prompt families' FAQ pages.

Views stay thin: rules live in services.py (writes) and selectors.py (reads).
"""

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from authorship.services import study_action
from base.authenticated import AuthenticatedRequest
from corpus.models import Premise
from crowd.holds import REFUSED_BACK, WAIT_YOUR_TURN, HoldRenewal, hold_view, record_no_task, renewal_message
from crowd.models import ClaimStatus, StudySession, TaskKind
from crowd.services import drafts_saved, worker_for_user
from crowd.stranding import strand
from crowd.views import task_visit

from . import holds, selectors, services, writing_claims
from .forms import WritingForm
from .models import WritingClaim

# --- the writing task -------------------------------------------------------------------------


@login_required
def writing_next(request: AuthenticatedRequest) -> HttpResponse:
    worker = worker_for_user(request.user)
    study_session, instead = task_visit(request, TaskKind.WRITING)
    if instead is not None:
        return instead
    claim = writing_claims.reopen_expired_line(worker, study_session=study_session)
    if claim is None:
        if holds.waits_its_turn_for(worker, study_session):
            turn = WAIT_YOUR_TURN.format(what="line")
            return render(request, "collection/no_tasks.html", {"study_session": study_session, "turn": turn})
        try:
            claim = writing_claims.claim_next_premise(worker, study_session=study_session)
        except writing_claims.NotAllowedToWrite as refused:
            return render(
                request,
                "collection/no_tasks.html",
                {**_no_task_context(study_session), "reason": refused.message},
                status=403,
            )
    if claim is None:
        record_no_task(study_session)  # this visit now waits: no line of the study is renewed meanwhile
        # A visit that did some tasks and finds none left cannot finish: it is told its way out.
        return render(
            request, "collection/no_tasks.html", {**_no_task_context(study_session), "stranded": strand(study_session)}
        )
    return redirect("writing_task", token=claim.token)


def _no_task_context(study_session: StudySession | None) -> dict[str, Any]:
    """What the no-task page says: "every line has been taken" only when that is true. Lines that
    have no split yet are never served: a participant is told the study is not ready instead."""
    unassigned = 0
    if study_session is not None:
        study = study_session.study
        unassigned = selectors.premises_without_split(study.dataset, study)
    return {
        "study_session": study_session,
        "unassigned": unassigned,
        "is_preview": study_session is not None and study_session.is_preview,
    }


ORPHAN_SENTENCES_KEY = "writing_orphan_sentences"
TEXT_FIELDS = [*services.HYPOTHESIS_FIELDS.values(), "problem_report"]


def _expired_page(request: HttpRequest, claim: WritingClaim, texts: dict[str, str] | None = None) -> HttpResponse:
    """The claim ran out: nothing was saved, so say so (409) and give the sentences back."""
    texts = texts or {}
    return render(
        request,
        "collection/writing_expired.html",
        {
            "claim": claim,
            "texts": [(name, texts.get(name, "")) for name in TEXT_FIELDS],
            "has_text": any(texts.values()),
        },
        status=409,
    )


def _posted_texts(request: HttpRequest) -> dict[str, str]:
    return {name: request.POST.get(name, "") for name in TEXT_FIELDS}


@login_required
@require_http_methods(["POST"])
def writing_resubmit(request: AuthenticatedRequest, token: uuid.UUID) -> HttpResponse:
    """Send sentences written for an expired task to the same line if it is still free, else to a
    fresh task with the sentences kept on the page for copying."""
    worker = worker_for_user(request.user)
    claim = selectors.claim_for_worker(worker, token)
    texts = _posted_texts(request)
    try:
        renewed, outcome = writing_claims.take_back_line(worker, claim.token)
    except writing_claims.ClaimAlreadySubmitted:
        messages.info(request, "Your sentences for that line were already saved.")
        return redirect("writing_next")
    if renewed is None:
        request.session[ORPHAN_SENTENCES_KEY] = texts
        why = (
            "That line has gone to someone else meanwhile."
            if outcome is HoldRenewal.TAKEN
            else renewal_message(outcome, what="that line")
        )
        messages.warning(request, f"{why} Here is a new one; your sentences are below it for copying if they fit.")
        return redirect("writing_next")
    return writing_task(request, token)


def _refused_key(token: uuid.UUID) -> str:
    return f"refused-writing-{token}"


def _refused_form(
    request: HttpRequest, token: uuid.UUID, premise: Premise, form_rules: dict[str, Any]
) -> WritingForm | None:
    """The refused submit of this task, once, with its text and its errors; None if there is none."""
    refused = request.session.pop(_refused_key(token), None)
    if not refused:
        return None
    form = WritingForm(refused["data"], premise=premise, **form_rules)
    form.is_valid()  # binds the fields; the errors below are the ones the submit got
    for name, errors in refused["errors"].items():
        field = name if name in form.fields else None
        for error in errors:
            if error not in form.errors.get(name or NON_FIELD_ERRORS, []):
                form.add_error(field, error)
    return form


@login_required
@require_http_methods(["GET", "POST"])
def writing_task(request: AuthenticatedRequest, token: uuid.UUID) -> HttpResponse:
    worker = worker_for_user(request.user)
    claim = selectors.claim_for_worker(worker, token)
    if claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
        messages.info(request, "Your sentences for that line were already saved. Here is the next task.")
        return redirect("writing_next")
    if claim.status == ClaimStatus.EXPIRED or claim.expires_at <= timezone.now():
        return _expired_page(request, claim, _posted_texts(request) if request.method == "POST" else None)

    premise = claim.premise
    rules = services.task_rules(study_session=claim.study_session)
    form_rules: dict[str, Any] = {"rules": rules, "reports_sent": services.reports_sent(worker, claim.study_session)}
    if request.method == "POST":
        form = WritingForm(request.POST, premise=premise, **form_rules)
        if form.is_valid():
            try:
                result = services.submit_hypotheses(
                    worker,
                    claim.token,
                    problem_report=form.cleaned_data["problem_report"],
                    typing_evidence=form.cleaned_data["typing_evidence"],
                    **form.hypotheses(),
                )
            except ValidationError as error:
                for name, field_errors in error.message_dict.items():
                    form.add_error(name if name in form.fields else None, field_errors)
            except writing_claims.ClaimAlreadySubmitted:
                messages.info(request, "Your sentences for that line were already saved. Here is the next task.")
                return redirect("writing_next")
            except writing_claims.ClaimExpired:
                return _expired_page(request, claim, _posted_texts(request))
            else:
                if result.pairs and result.report:
                    messages.success(request, "Saved, thank you. We will look at the problem you reported.")
                elif result.report:
                    messages.success(
                        request,
                        "Thank you for the report; here is another line. Reports help us but do not count "
                        "as written tasks towards the completion code.",
                    )
                else:
                    messages.success(request, "Saved, thank you.")
                drafts_saved(request, f"writing-{claim.token}")
                return redirect("writing_next")
        # Refused: shown once by a GET (post/redirect/get), so a reload neither posts the old text
        # again nor hides what the worker typed after the error (the browser's draft fills the fields).
        request.session[_refused_key(claim.token)] = {
            "data": {name: request.POST.get(name, "") for name in form.fields},
            "errors": {name: [str(e) for e in errors] for name, errors in form.errors.items()},
        }
        return redirect("writing_task", token=claim.token)
    else:
        form = _refused_form(request, claim.token, premise, form_rules) or WritingForm(premise=premise, **form_rules)

    context = {
        **selectors.family_guide(premise.genre.family),
        "claim": claim,
        "premise": premise,
        "form": form,
        "hypothesis_fields": [form[name] for name in services.HYPOTHESIS_FIELDS.values()],
        "hold": hold_view([claim], timezone.now(), minutes=holds.claim_minutes(claim.study_session)),
        "renew_url": reverse("writing_renew", kwargs={"token": claim.token}),
        "next_href": reverse("writing_next"),
        "study_session": claim.study_session,
        "rules": rules,
        "typing_action": study_action(claim.study_session),
        "orphan_sentences": [text for text in request.session.pop(ORPHAN_SENTENCES_KEY, {}).values() if text.strip()],
    }
    return render(request, "collection/writing_task.html", context)


def renew_hold_then(request: AuthenticatedRequest, token: uuid.UUID, back: dict[str, str]) -> HttpResponse:
    """ "More time" or "Get this line back" for a writing claim (collection.holds), then `back` (the
    task's page) with one line that says what happened; a line gone to others leaves for a fresh one."""
    renewed = holds.renew_writing_hold(worker_for_user(request.user), token)
    if renewed is None:
        raise Http404("No such task.")
    message = renewal_message(renewed, what="this line")
    if renewed in (HoldRenewal.GONE, *REFUSED_BACK):
        messages.info(request, f"{message} Here is a fresh task.")
        return redirect(back["next"])
    if renewed in (HoldRenewal.AT_LIMIT, HoldRenewal.WAITED_FOR, HoldRenewal.BUSY):
        messages.warning(request, message)
    else:
        messages.success(request, message)
    return redirect(back["task"], token=token)


@login_required
@require_http_methods(["POST"])
def writing_renew(request: AuthenticatedRequest, token: uuid.UUID) -> HttpResponse:
    return renew_hold_then(request, token, {"task": "writing_task", "next": "writing_next"})


def faq(request: HttpRequest, slug: str) -> HttpResponse:
    family = selectors.family_with_faq(slug)
    context = {**selectors.family_guide(family), "entries": family.faq_entries.all()}
    return render(request, "collection/faq.html", context)
