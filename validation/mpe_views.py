"""The MPE judgment task: four captions, a proposed sentence, yes / unknown / no (Lai et al. 2017 §4.2).

Batches of five items, claims, expiry and the five-judgment target are validation's own
(`services.claim_validation_batch` with the multi-premise item kind); only the wording differs.
A participant who arrived by an MPE study's link (`TaskKind.MPE_JUDGMENT`) gets that study's
dataset only, and each submitted batch counts towards the session's completion code.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from corpus.counters import LabelRefused
from corpus.models import ItemKind
from corpus.mpe_wording import ANSWERS, INSTRUCTIONS, QUESTION
from crowd.arrival import current_study_session
from crowd.models import ClaimStatus, TaskKind
from crowd.services import drafts_saved, worker_for_user
from crowd.views import completion_page, task_refusal_page

from . import selectors, services
from .forms import MpeBatchForm, claim_field_name


@login_required
def next_batch(request):
    worker = worker_for_user(request.user)
    # A participant of another kind of study may not spend their visit here (and vice versa).
    refused = task_refusal_page(request, current_study_session(request), TaskKind.MPE_JUDGMENT)
    if refused is not None:
        return refused
    study_session = current_study_session(request, TaskKind.MPE_JUDGMENT)
    if study_session is not None and study_session.is_complete:
        return completion_page(request, study_session)
    try:
        batch = services.claim_mpe_batch(worker, study_session=study_session)
    except services.NotAllowedToValidate as refused:
        return render(request, "validation/no_tasks.html", {"reason": refused.message, "mpe": True}, status=403)
    if batch is None:
        return render(request, "validation/no_tasks.html", {"reason": None, "mpe": True})
    return redirect("validation:mpe-batch", batch=batch)


@login_required
@require_http_methods(["GET", "POST"])
def batch(request, batch):
    worker = worker_for_user(request.user)
    claims = [
        claim
        for claim in selectors.batch_claims(worker, batch)
        if claim.pair.dataset.item_kind == ItemKind.MULTI_PREMISE
    ]
    if not claims:
        raise Http404("No such batch.")
    if all(claim.status == ClaimStatus.SUBMITTED for claim in claims):
        messages.info(request, "That batch is already saved. Thank you!")
        return redirect("validation:mpe-next")
    pairs = [claim.pair for claim in claims]
    expired = any(claim.status != ClaimStatus.OPEN or claim.expires_at <= timezone.now() for claim in claims)
    form = MpeBatchForm(pairs, request.POST or None, names={c.pair_id: claim_field_name(c) for c in claims})
    missing, error = (), None
    if request.method == "POST" and form.is_valid():
        try:
            services.submit_validation_batch(worker, batch, form.labels())
        except services.BatchAlreadySubmitted as done:
            messages.info(request, done.message)
            return redirect("validation:mpe-next")
        except services.BatchIncomplete as incomplete:
            error, missing = (
                "Please answer yes, unknown or no for every item; nothing was saved yet.",
                incomplete.missing,
            )
        except LabelRefused as refused:
            error = refused.message
        else:
            messages.success(request, "Saved. Thank you!")
            drafts_saved(request, f"mpe-{batch}")
            return redirect("validation:mpe-next")
    elif request.method == "POST":
        error = "Please answer yes, unknown or no for every item."
    context = {
        "batch": batch,
        "rows": list(form.rows(missing=missing)),
        "error": error,
        "expired": expired,
        "expires_at": claims[0].expires_at,
        "seconds_left": max(0, int((claims[0].expires_at - timezone.now()).total_seconds())),
        "question": QUESTION,
        "instructions": INSTRUCTIONS.split("\n\n"),
        "answers": [(answer, text) for answer, (_, text) in ANSWERS.items()],
    }
    return render(request, "validation/mpe_batch.html", context, status=400 if error else 200)
