"""The per-premise task of MPE items (Lai et al. 2017 §5.2): one caption of an item and its
hypothesis per pair, judged with the validation page's three answers and keys, in batches.

Thin: claims, the cap of three judgments and the refusals live in `premise_labels`.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from corpus.counters import LabelRefused
from crowd.models import ClaimStatus
from crowd.services import worker_for_user

from . import premise_labels as services
from .forms import CHOICES, KEYS, claim_field_name
from .models import PremiseLabelClaim


def batch_claims(worker, batch):
    """A worker's own claims in one batch, with what the page shows; another worker's batch is empty."""
    return (
        PremiseLabelClaim.objects.filter(worker=worker, batch=batch)
        .select_related("premise_pair__item__premise")
        .order_by("id")
    )


def rows(claims, data, missing=()):
    """What the template draws: each pair's premise sentence, the hypothesis and the three buttons."""
    for number, claim in enumerate(claims, 1):
        name = claim_field_name(claim)
        value = data.get(name, "")
        sentences = claim.premise_pair.item.premise.premise_sentences
        index = claim.premise_pair.index
        yield {
            "number": number,
            "name": name,
            "premise": sentences[index] if index < len(sentences) else "",
            "hypothesis": claim.premise_pair.item.hypothesis,
            "missing": claim.premise_pair_id in missing,
            "options": [
                {"value": v, "text": text, "key": KEYS[v], "checked": v == value, "id": f"{name}-{KEYS[v]}"}
                for v, text in CHOICES
            ],
        }


@login_required
def next_batch(request):
    worker = worker_for_user(request.user)
    try:
        batch = services.claim_premise_batch(worker)
    except services.PremiseLabelRefused as refused:
        return render(request, "validation/no_tasks.html", {"reason": refused.message, "premise": True}, status=403)
    if batch is None:
        return render(request, "validation/no_tasks.html", {"reason": None, "premise": True})
    return redirect("validation:premise-batch", batch=batch)


@login_required
@require_http_methods(["GET", "POST"])
def batch(request, batch):
    worker = worker_for_user(request.user)
    claims = list(batch_claims(worker, batch))
    if not claims:
        raise Http404("No such batch.")
    if all(claim.status == ClaimStatus.SUBMITTED for claim in claims):
        messages.info(request, "That batch is already saved. Thank you!")
        return redirect("validation:premise-next")
    expired = any(claim.status != ClaimStatus.OPEN or claim.expires_at <= timezone.now() for claim in claims)
    missing, error = (), None
    if request.method == "POST":
        labels = {claim.premise_pair_id: request.POST.get(claim_field_name(claim), "") for claim in claims}
        try:
            services.submit_premise_batch(worker, batch, labels)
        except services.PremiseBatchAlreadySubmitted as done:
            messages.info(request, done.message)
            return redirect("validation:premise-next")
        except services.PremiseBatchIncomplete as incomplete:
            error, missing = incomplete.message, incomplete.missing
        except LabelRefused as refused:
            error = refused.message
        else:
            messages.success(request, "Saved. Thank you!")
            return redirect("validation:premise-next")
    context = {
        "batch": batch,
        "rows": list(rows(claims, request.POST if request.method == "POST" else {}, missing)),
        "error": error,
        "expired": expired,
        "expires_at": claims[0].expires_at,
        "seconds_left": max(0, int((claims[0].expires_at - timezone.now()).total_seconds())),
        "next_href": reverse("validation:premise-next"),
        "draft_key": f"premise-{batch}",
    }
    return render(request, "validation/premise_batch.html", context, status=400 if error else 200)
