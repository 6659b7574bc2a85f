"""Researcher pages of adversarial studies: the rounds and their figures, closing a round, the
export. The rounds are the adversarial app's (`adversarial.rounds`, `adversarial.selectors`)."""

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from adversarial import rounds, selectors
from corpus.models import Split
from dashboard.queries import adversarial as queries
from teams import access

from .common import researcher_required


@researcher_required
def rounds_index(request: HttpRequest) -> HttpResponseBase:
    return render(
        request,
        "dashboard/adversarial.html",
        {"studies": queries.adversarial_studies(request.user), "active": "adversarial"},
    )


@researcher_required
def study_rounds(request: HttpRequest, slug: str) -> HttpResponseBase:
    study = access.checked(queries.adversarial_study(slug), request.user, missing="No Study matches the given query.")
    context = {
        "study": study,
        "rounds": selectors.study_rounds(study),
        "datasets": access.kept(queries.collected_datasets(), request.user, access.RESEARCH),
        "splits": [Split.TRAIN, Split.DEV, Split.TEST],
        "advance_seconds": queries.advance_interval_seconds(),
        "embedded": settings.CELERY_TASK_ALWAYS_EAGER,
        "active": "adversarial",
    }
    return render(request, "dashboard/adversarial_rounds.html", context)


@researcher_required
@require_POST
def close(request: HttpRequest, slug: str, number: int) -> HttpResponseBase:
    round_ = access.checked(
        queries.round_of(slug, number),
        request.user,
        access.RESEARCH,
        "study__team",
        "No Round matches the given query.",
    )
    next_dataset = None
    if request.POST.get("next_dataset"):
        next_dataset = queries.dataset_named(request.POST["next_dataset"])
        if next_dataset is None or not access.may(request.user, next_dataset.team_id, access.RESEARCH):
            messages.error(request, f"Unknown dataset {request.POST['next_dataset']!r}; nothing was changed.")
            return redirect("dashboard:adversarial_rounds", slug=slug)
    try:
        rounds.close_round(
            round_,
            user=request.user,
            next_dataset=next_dataset,
            confirm_unverified=request.POST.get("confirm_unverified") == "yes",
        )
    except rounds.RoundRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(
            request,
            f"Round {number} is closing: its snapshot is exported, the next target trains on the gpu queue, "
            "and the next round opens on it when the run is done.",
        )
    return redirect("dashboard:adversarial_rounds", slug=slug)


@researcher_required
@require_POST
def advance(request: HttpRequest, slug: str) -> HttpResponseBase:
    access.checked(
        queries.adversarial_study(slug), request.user, access.RESEARCH, missing="No Study matches the given query."
    )
    for round_ in queries.closing_rounds(slug):
        rounds.advance_round(round_, user=request.user)
    return redirect("dashboard:adversarial_rounds", slug=slug)


@researcher_required
def export(request: HttpRequest, slug: str, number: int) -> HttpResponseBase:
    round_ = access.checked(
        queries.round_of(slug, number), request.user, access.EXPORT, "study__team", "No Round matches the given query."
    )
    split = request.GET.get("split") or None
    if split is not None and split not in Split.values:
        raise Http404(f"Unknown split {split!r}; one of {', '.join(Split.values)}.")
    name = f"{slug}-r{number}{'-' + split if split else ''}.jsonl"
    response = StreamingHttpResponse(selectors.export_jsonl(round_, split), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
