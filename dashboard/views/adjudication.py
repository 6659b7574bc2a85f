"""The adjudication queue (issue 42.2): pairs to settle, by filter, decided by keyboard or mouse."""

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_POST

from corpus.services import LabelRefused
from dashboard.queries.common import pair as pair_named
from validation import adjudication

from .common import Scope, found, redirect_back, render_page, researcher_required

QUEUE_SHOWN = 50


@researcher_required
def adjudication_queue(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    slug = request.GET.get("queue", adjudication.DEFAULT_FILTER)
    if slug not in adjudication.FILTER_BY_SLUG:
        slug = adjudication.DEFAULT_FILTER
    include_decided = request.GET.get("decided") == "1"
    pairs = adjudication.queue(scope.dataset, scope.split, slug, include_decided=include_decided)
    shown = list(pairs[:QUEUE_SHOWN])
    return render_page(
        request,
        "dashboard/adjudication.html",
        "adjudication",
        scope,
        filters=adjudication.FILTERS,
        current=adjudication.FILTER_BY_SLUG[slug],
        counts=adjudication.queue_counts(scope.dataset, scope.split),
        pairs=shown,
        include_decided=include_decided,
        labels=adjudication.LABELS,
        effect=adjudication.before_and_after(scope.dataset, scope.split),
    )


@researcher_required
@require_POST
def adjudicate(request: HttpRequest, pair_id: int) -> HttpResponseBase:
    """One decision: a label, retire, or withdraw; with its reason and the researcher."""
    pair = found(pair_named(pair_id), "No such pair.")
    try:
        adjudication.decide(
            pair,
            request.POST.get("decision", ""),
            researcher=request.user,
            reason=request.POST.get("reason", "")[:100],
            note=request.POST.get("note", "")[:1000],
        )
    except LabelRefused as refused:
        messages.error(request, f"Pair {pair.pair_id} was not changed: {refused.message}")
    else:
        shown = "retired" if pair.adjudicated_label == "-" else pair.gold_label
        messages.success(request, f"Pair {pair.pair_id}: gold label is now {shown}; its labels stay.")
    return redirect_back(request, "dashboard:adjudication")
