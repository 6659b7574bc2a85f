"""The validation task pages: next batch, one batch of five, the validation FAQ. Thin: rules live in services."""

import re

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from corpus.counters import LabelRefused
from corpus.models import Grammaticality, ItemKind
from crowd.arrival import current_study_session
from crowd.models import ClaimStatus, TaskKind
from crowd.services import drafts_saved, worker_for_user
from crowd.views import completion_page, task_refusal_page

from . import grammaticality as grammar
from . import selectors, services
from .forms import ValidationBatchForm, claim_field_name


@login_required
def next_batch(request):
    worker = worker_for_user(request.user)
    refused = task_refusal_page(request, current_study_session(request), TaskKind.VALIDATION)
    if refused is not None:
        return refused
    study_session = current_study_session(request, TaskKind.VALIDATION)
    if study_session is not None and study_session.is_complete:
        return completion_page(request, study_session)
    try:
        batch = services.claim_validation_batch(worker, study_session=study_session)
    except services.NotAllowedToValidate as refused:
        return render(request, "validation/no_tasks.html", {"reason": refused.message}, status=403)
    if batch is None:
        return render(request, "validation/no_tasks.html", {"reason": None})
    return redirect("validation:batch", batch=batch)


@login_required
@require_http_methods(["GET", "POST"])
def batch(request, batch):
    worker = worker_for_user(request.user)
    claims = list(selectors.batch_claims(worker, batch))
    if not claims:
        raise Http404("No such batch.")
    if claims[0].pair.dataset.item_kind == ItemKind.MULTI_PREMISE:  # MPE items have their own wording
        return redirect("validation:mpe-batch", batch=batch)
    if all(claim.status == ClaimStatus.SUBMITTED for claim in claims):
        messages.info(request, "That batch is already saved. Thank you!")
        return redirect("validation:next")
    pairs = [claim.pair for claim in claims]
    expired = any(claim.status != ClaimStatus.OPEN or claim.expires_at <= timezone.now() for claim in claims)
    form = ValidationBatchForm(pairs, request.POST or None, names={c.pair_id: claim_field_name(c) for c in claims})
    missing = ()
    error = None
    if request.method == "POST" and form.is_valid():
        try:
            services.submit_validation_batch(worker, batch, form.labels())
        except services.BatchAlreadySubmitted as done:
            messages.info(request, done.message)
            return redirect("validation:next")
        except services.BatchIncomplete as incomplete:
            error, missing = incomplete.message, incomplete.missing
        except LabelRefused as refused:  # services.ValidationRefused and the core's refusals alike
            error = refused.message
        else:
            messages.success(request, "Saved. Thank you!")
            drafts_saved(request, f"batch-{batch}")
            return redirect("validation:next")
    elif request.method == "POST":
        error = (
            "Please choose one of the three labels for each pair."
            if form.scheme == "three_way"
            else ("Please choose an answer for each pair.")
        )
    context = {
        "batch": batch,
        "rows": list(form.rows(missing=missing)),
        "scheme": form.scheme,
        "error": error,
        "expired": expired,
        "expires_at": claims[0].expires_at,
        "seconds_left": max(0, int((claims[0].expires_at - timezone.now()).total_seconds())),
        "study_session": claims[0].study_session,
    }
    return render(request, "validation/batch.html", context, status=400 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def grammaticality(request):
    """DNC's grammaticality task: up to five hypotheses, each none / minor / major issues, sent together."""
    worker = worker_for_user(request.user)
    error, missing, chosen = None, [], {}
    if request.method == "POST":
        # ASCII digits only, of a size a primary key can have: "²" is a digit to str.isdigit() but
        # not to int(), and a 30-digit number overflows the database's integer.
        answers = {
            int(key.removeprefix("grammar-")): value
            for key, value in request.POST.items()
            if re.fullmatch(r"grammar-[0-9]{1,18}", key)
        }
        # The page's sentences (hidden fields): a page with any left unanswered is refused whole.
        shown = [int(pk) for pk in request.POST.getlist("shown") if re.fullmatch(r"[0-9]{1,18}", pk)]
        try:
            grammar.submit_judgments(worker, answers, shown=shown)
        except LabelRefused as refused:
            error = refused.message
            missing = getattr(refused, "missing", [])
            chosen = answers
        else:
            messages.success(request, "Saved. Thank you!")
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
    return render(request, "validation/grammaticality.html", context, status=400 if error else 200)


def faq(request):
    """The FAQ states exactly what this worker's study pays for catch trials (its own settings)."""
    study_session = current_study_session(request, TaskKind.VALIDATION)
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
