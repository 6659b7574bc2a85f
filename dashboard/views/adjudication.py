"""The adjudication queue: pairs to settle, by filter, decided by keyboard or mouse."""

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_POST

from corpus.labels import LABELS
from corpus.services import LabelRefused
from dashboard.queries.adjudication import queue_figures
from dashboard.queries.common import pair as pair_named
from dashboard.queries.quality import flagged_workers_as_of
from teams import access
from validation import adjudication

from .common import Scope, redirect_back, render_page, researcher_required

# Pairs of a queue shown at once (each is a form of its own: all of them were most of a cold page).
QUEUE_SHOWN = 25
# The session key of this researcher's last decision: the page's undo (the u key and its link).
LAST_DECISION = "adjudication_last_decision"


@researcher_required
def adjudication_queue(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    filters = adjudication.filters_for(scope.within, datasets=scope.within_datasets)
    slug = request.GET.get("queue", adjudication.DEFAULT_FILTER)
    if slug not in {f.slug for f in filters}:
        slug = adjudication.DEFAULT_FILTER
    include_decided = request.GET.get("decided") == "1"
    # The teams' labels only; read once (and kept a few seconds), for the queue and every count.
    flagged, flags_as_of, flagged_pairs = flagged_workers_as_of(scope.teams_within)
    latest = adjudication.latest_runs(scope.within)
    pairs = adjudication.queue(scope.within, slug, include_decided=include_decided, flagged=flagged, latest=latest)
    decisions = adjudication.recent_decisions(scope.within)
    page = int(request.GET["page"]) if request.GET.get("page", "").isdigit() and int(request.GET["page"]) > 0 else 1
    first = (page - 1) * QUEUE_SHOWN
    shown = list(pairs[first : first + QUEUE_SHOWN + 1])  # one more: is there a next page?
    counts, effect = queue_figures(
        scope.within,
        scope.teams_within,
        flagged=flagged,
        flagged_pairs=flagged_pairs,
        latest=latest,
        holds_every_dataset=scope.holds_every_dataset,
    )
    return render_page(
        request,
        "dashboard/adjudication.html",
        "adjudication",
        scope,
        filters=filters,
        current=adjudication.FILTER_BY_SLUG[slug],
        counts=counts,
        pairs=shown[:QUEUE_SHOWN],
        page=page,
        first_shown=first + 1,
        last_shown=first + len(shown[:QUEUE_SHOWN]),
        next_page=page + 1 if len(shown) > QUEUE_SHOWN else None,
        include_decided=include_decided,
        flags_as_of=flags_as_of,  # when the flagged workers were computed (the maintained rows)
        labels=LABELS,
        effect=effect,
        decisions=decisions,
        last_decision=adjudication.last_undoable(decisions, request.session.get(LAST_DECISION)),
    )


@researcher_required
@require_POST
def adjudicate(request: HttpRequest, pair_id: int) -> HttpResponseBase:
    """One decision: a label, retire, or withdraw; with its reason and the researcher."""
    pair = access.checked(pair_named(pair_id), request.user, access.LABEL, via="dataset__team", missing="No such pair.")
    try:
        decision = adjudication.decide(
            pair,
            request.POST.get("decision", ""),
            researcher=request.user,
            reason=request.POST.get("reason", "")[:100],
            note=request.POST.get("note", "")[:1000],
        )
    except LabelRefused as refused:
        messages.error(request, f"Pair {pair.pair_id} was not changed: {refused.message}")
    else:
        request.session[LAST_DECISION] = decision.pk  # the page's undo (the u key) acts on it
        shown = "retired" if pair.adjudicated_label == "-" else pair.gold_label
        messages.success(
            request,
            f"Pair {pair.pair_id}: gold label is now {shown}; its labels stay. Undo: the u key or the link above.",
        )
    return redirect_back(request, "dashboard:adjudication")


@researcher_required
@require_POST
def adjudication_undo(request: HttpRequest, decision_id: int) -> HttpResponseBase:
    """Undo one decision: the pair back where it stood before it."""
    decision = access.checked(
        adjudication.decision(decision_id),
        request.user,
        access.LABEL,
        via="pair__dataset__team",
        missing="No such decision.",
    )
    try:
        adjudication.undo(decision, researcher=request.user)  # sets the pair's gold on decision.pair
    except LabelRefused as refused:
        messages.error(request, f"Pair {decision.pair.pair_id} was not changed: {refused.message}")
    else:
        request.session.pop(LAST_DECISION, None)
        pair = decision.pair
        shown = "retired" if pair.adjudicated_label == "-" else pair.gold_label
        messages.success(request, f"Decision on pair {pair.pair_id} undone: gold label is {shown} again.")
    return redirect_back(request, "dashboard:adjudication")
