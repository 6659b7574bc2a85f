"""The validation task pages: next batch, one batch of five, the validation FAQ. Thin: rules live in services."""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from authorship.networks import note_network
from base.authenticated import AuthenticatedRequest
from corpus.models import Grammaticality, ItemKind
from corpus.services import LabelRefused
from crowd.arrival import current_study_session
from crowd.claiming import ClaimRule
from crowd.holds import REFUSED_BACK, WAIT_YOUR_TURN, HoldRenewal, hold_view, record_no_task, renewal_message
from crowd.models import ClaimStatus, TaskKind
from crowd.services import drafts_saved, worker_for_user
from crowd.stranding import strand
from crowd.views import task_refusal_page, task_visit

from . import batch_claims, holds, selectors, services
from . import grammaticality as grammar
from .forms import ValidationBatchForm, claim_field_name


@dataclass(frozen=True)
class BatchTask:
    """A batch task of this app: by default validation (single-premise pairs); MPE judgments
    (`mpe_views.MPE`) and per-premise labels (`premise_label_views.PREMISE`) change what differs.
    `next_batch_page` and `batch_page` are the rest, written once for all."""

    item_kind: str | None = ItemKind.SINGLE_PREMISE  # None: the claims' items are not pairs of a kind
    task_kind: str = TaskKind.VALIDATION
    claim: Callable[..., Any] = batch_claims.claim_validation_batch  # (worker, study_session=...) -> batch or None
    claims: Callable[[Any, Any], Any] = selectors.batch_claims  # (worker, batch) -> the worker's claims in it
    item: Callable[[Any], Any] = lambda claim: claim.pair  # what a claim holds (the form's items)
    submit: Callable[..., Any] = services.submit_validation_batch  # (worker, batch, {item pk: answer})
    form: type[ValidationBatchForm] = ValidationBatchForm
    template: str = "validation/batch.html"
    next_url: str = "validation:next"
    batch_url: str = "validation:batch"
    draft_prefix: str = "batch"  # the browser's draft key is f"{draft_prefix}-{batch}"
    other_kind_url: str | None = "validation:mpe-batch"  # a batch of the other item kind goes there; None: 404
    renew_url: str = "validation:batch-renew"  # "More time" and "Get these pairs back" (views.renew_page)
    claim_rule: ClaimRule = batch_claims.VALIDATION_CLAIMS  # whose claims a renewal locks and whose room it counts
    items_word: str = "pairs"
    no_tasks_context: dict[str, Any] = field(default_factory=dict)
    unanswered: Callable[[Any], str] = lambda form: (
        "Please choose one of the three labels for each pair."
        if form.scheme == "three_way"
        else "Please choose an answer for each pair."
    )
    incomplete: Callable[[batch_claims.BatchIncomplete], Any] = lambda incomplete: incomplete.message
    context: Callable[[Any, list[Any]], dict[str, Any]] = lambda form, claims: {
        "scheme": form.scheme,
        "study_session": claims[0].study_session,
    }


def next_batch_page(request: AuthenticatedRequest, task: BatchTask) -> HttpResponseBase:
    """The task's next batch (claimed or given back), or the page to show instead."""
    worker = worker_for_user(request.user)
    study_session, instead = task_visit(request, task.task_kind)
    if instead is not None:
        return instead
    note_network(request, worker)  # verifiers of one example are kept apart by it (adversarial.verification)
    if holds.waits_its_turn_for(worker, study_session, task.claim_rule):
        turn = WAIT_YOUR_TURN.format(what="batch")
        return render(request, "validation/no_tasks.html", {"reason": None, "turn": turn, **task.no_tasks_context})
    try:
        batch = task.claim(worker, study_session=study_session)
    except batch_claims.NotAllowedToValidate as refused:
        return render(
            request, "validation/no_tasks.html", {"reason": refused.message, **task.no_tasks_context}, status=403
        )
    if batch is None:
        record_no_task(study_session)  # this visit now waits: no hold of the study is renewed meanwhile
        # A visit that did some batches and finds none left cannot finish: it is told its way out.
        context = {"reason": None, "stranded": strand(study_session), **task.no_tasks_context}
        return render(request, "validation/no_tasks.html", context)
    return redirect(task.batch_url, batch=batch)


def batch_page(request: AuthenticatedRequest, batch: UUID, task: BatchTask) -> HttpResponseBase:
    worker = worker_for_user(request.user)
    claims = list(task.claims(worker, batch))
    # A batch never mixes item kinds.
    if claims and task.item_kind is not None and claims[0].pair.dataset.item_kind != task.item_kind:
        if task.other_kind_url is None:
            claims = []
        else:
            return redirect(task.other_kind_url, batch=batch)
    if not claims:
        raise Http404("No such batch.")
    if all(claim.status == ClaimStatus.SUBMITTED for claim in claims):
        messages.info(request, "That batch is already saved. Thank you!")
        return redirect(task.next_url)
    items = [task.item(claim) for claim in claims]
    names = {item.pk: claim_field_name(claim) for item, claim in zip(items, claims, strict=True)}
    form = task.form(items, request.POST or None, names=names)
    draft_key = f"{task.draft_prefix}-{batch}"
    missing: Sequence[int] = ()
    error, status = None, 200
    if request.method == "POST" and form.is_valid():
        try:
            task.submit(worker, batch, form.labels())
        except batch_claims.BatchAlreadySubmitted as done:
            messages.info(request, done.message)
            return redirect(task.next_url)
        except batch_claims.BatchExpired:
            # The page says so once (its hold ran out) and offers the items back; nothing was saved.
            claims, status = list(task.claims(worker, batch)), 409
        except batch_claims.BatchIncomplete as incomplete:
            error, missing = task.incomplete(incomplete), incomplete.missing
        except LabelRefused as refused:  # batch_claims.ValidationRefused and the core's refusals alike
            error = refused.message
        else:
            messages.success(request, "Saved. Thank you!")
            drafts_saved(request, draft_key)
            return redirect(task.next_url)
    elif request.method == "POST":
        error = task.unanswered(form)
    hold = hold_view(claims, timezone.now(), minutes=holds.claims_minutes(claims))
    if hold.expired:
        error = None  # one message: the hold's, which offers the items back
        status = 409 if request.method == "POST" else status
    context = {
        "batch": batch,
        "rows": list(form.rows(missing=missing)),
        "error": error,
        "hold": hold,
        "renew_url": reverse(task.renew_url, kwargs={"batch": batch}),
        "taken": refused_back_message(request, f"these {task.items_word}"),
        "items_word": task.items_word,
        "hold_what": f"these {task.items_word}",
        "next_href": reverse(task.next_url),
        "draft_key": draft_key,
        **task.context(form, claims),
    }
    return render(request, task.template, context, status=400 if error else status)


def refused_back_message(request: HttpRequest, what: str) -> str:
    """Why an expired batch did not come back, from the renewal's redirect (`?taken=`): the message
    its hold shows in place of "Get these back"; "" when it was not refused."""
    outcome = next((outcome for outcome in REFUSED_BACK if outcome.value == request.GET.get("taken")), None)
    return renewal_message(outcome, what=what) if outcome is not None else ""


def renew_page(request: AuthenticatedRequest, batch: UUID, task: BatchTask) -> HttpResponseBase:
    """ "More time" or "Get these items back" (validation.holds): back to the batch, with one line
    that says what happened; items taken by others meanwhile leave the batch page offering a new one."""
    renewed = holds.renew_batch(worker_for_user(request.user), batch, task.claim_rule)
    if renewed is None:
        raise Http404("No such batch.")
    message = renewal_message(renewed.outcome, what=f"these {task.items_word}")
    if renewed.outcome is HoldRenewal.GONE:
        messages.info(request, message)
        return redirect(task.next_url)
    if renewed.outcome in REFUSED_BACK:
        # The batch's page says why (its hold's message, in place of "Get these back") and offers a new batch.
        return redirect(reverse(task.batch_url, kwargs={"batch": batch}) + f"?taken={renewed.outcome.value}")
    if renewed.outcome in (HoldRenewal.AT_LIMIT, HoldRenewal.WAITED_FOR, HoldRenewal.BUSY):
        messages.warning(request, message)
    else:
        messages.success(request, message)
    return redirect(task.batch_url, batch=batch)


def task_views(
    task: BatchTask,
) -> tuple[
    Callable[[AuthenticatedRequest], HttpResponseBase],
    Callable[[AuthenticatedRequest, UUID], HttpResponseBase],
    Callable[[AuthenticatedRequest, UUID], HttpResponseBase],
]:
    """A batch task's views for the URLconf: next batch, one batch, its renewal (a POST)."""

    @login_required
    def next_batch(request: AuthenticatedRequest) -> HttpResponseBase:
        return next_batch_page(request, task)

    @login_required
    @require_http_methods(["GET", "POST"])
    def batch(request: AuthenticatedRequest, batch: UUID) -> HttpResponseBase:
        return batch_page(request, batch, task)

    @login_required
    @require_http_methods(["POST"])
    def renew(request: AuthenticatedRequest, batch: UUID) -> HttpResponseBase:
        return renew_page(request, batch, task)

    return next_batch, batch, renew


VALIDATION = BatchTask()
next_batch, batch, renew = task_views(VALIDATION)


@login_required
@require_http_methods(["GET", "POST"])
def grammaticality(request: AuthenticatedRequest) -> HttpResponseBase:
    """DNC's grammaticality task: up to five hypotheses, each none / minor / major issues, sent together.

    Offered beside a validation study's batches, so it asks what they ask: inside a study visit, the
    study's own admission and kind of task (else it would be open to anyone logged in)."""
    refused = task_refusal_page(request, current_study_session(request), TaskKind.VALIDATION)
    if refused is not None:
        return refused
    worker = worker_for_user(request.user)
    error: str | None = None
    chosen: dict[int, str] = {}
    missing: list[int] = []
    if request.method == "POST":
        # ASCII digits only, of a size a primary key can have: "²" is a digit to str.isdigit() but
        # not to int(), and a 30-digit number overflows the database's integer.
        answers = {
            int(key.removeprefix("grammar-")): value
            for key, value in request.POST.items()
            # A posted field's value is its last one, a str (the stubs allow a list: an empty one).
            if re.fullmatch(r"grammar-[0-9]{1,18}", key) and isinstance(value, str)
        }
        # The page's sentences (hidden fields): a page with any left unanswered is refused whole.
        shown = [int(pk) for pk in request.POST.getlist("shown") if re.fullmatch(r"[0-9]{1,18}", pk)]
        posted = holds.grammaticality_page_claims(worker, shown)
        try:
            grammar.submit_judgments(worker, answers, shown=shown)
        except LabelRefused as refusal:
            error = str(refusal.message)
            missing = getattr(refusal, "missing", [])
            chosen = answers
        else:
            messages.success(request, "Saved. Thank you!")
            if posted:  # the browser may drop its copy of the page's choices
                drafts_saved(request, f"grammar-{posted[0].batch}")
            return redirect("validation:grammaticality")
    pairs = grammar.hypotheses_to_judge(worker)
    if missing:
        # The same page again, with the answers given kept (nothing was saved, so it is still open).
        kept = {pair.pk: pair for pair in grammar.pairs_shown_again(worker, shown)}
        pairs = [kept[pk] for pk in shown if pk in kept] or pairs
    rows = [
        {
            "pair": pair,
            "missing": pair.pk in missing,
            "options": [
                {"value": value, "text": text, "key": str(key), "checked": chosen.get(pair.pk) == value}
                for key, (value, text) in enumerate(Grammaticality.choices, 1)
            ],
        }
        for pair in pairs
    ]
    context = {"pairs": pairs, "rows": rows, "error": error}
    page_claims = holds.grammaticality_page_claims(worker, [pair.pk for pair in pairs])
    if page_claims:
        batch = page_claims[0].batch
        context |= {
            "hold": hold_view(page_claims, timezone.now(), minutes=holds.claims_minutes(page_claims)),
            "renew_url": reverse("validation:grammaticality-renew", kwargs={"batch": batch}),
            "next_href": reverse("validation:grammaticality"),
            "draft_key": f"grammar-{batch}",
        }
    return render(request, "validation/grammaticality.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["POST"])
def grammaticality_renew(request: AuthenticatedRequest, batch: UUID) -> HttpResponseBase:
    """ "More time" or "Get these sentences back" for the worker's grammaticality page."""
    renewed = holds.renew_batch(worker_for_user(request.user), batch, grammar.GRAMMATICALITY_CLAIMS)
    if renewed is None:
        raise Http404("No such page.")
    message = renewal_message(renewed.outcome, what="these sentences")
    if renewed.outcome in (*REFUSED_BACK, HoldRenewal.GONE):
        message += " Here are other sentences."
    level = messages.success if renewed.outcome in (HoldRenewal.EXTENDED, HoldRenewal.TAKEN_BACK) else messages.info
    level(request, message)
    return redirect("validation:grammaticality")


def faq(request: HttpRequest) -> HttpResponseBase:
    """The FAQ states exactly what this worker's study pays for catch trials (its own settings)."""
    study_session = current_study_session(request, task_kind=TaskKind.VALIDATION)
    study = study_session.study if study_session else None
    pays_bonus = bool(study and study.catch_trial_share > 0 and study.bonus_per_catch_match > 0)
    return render(
        request,
        "validation/faq.html",
        {
            "claim_minutes": settings.NLI["VALIDATION_CLAIM_MINUTES"],
            "study": study,
            "pays_bonus": pays_bonus,
            "catch_percent": round(study.catch_trial_share * 100, 1) if study else None,
        },
    )
