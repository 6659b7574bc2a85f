"""The pair browser and the queue of premises reported by writers."""

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from collection import services as collection_services
from corpus.models import Label, Split
from dashboard.queries import pairs as queries
from dashboard.queries.collection import held_premise_count
from dashboard.queries.common import genres

from .common import Scope, found, render_page, researcher_required


@researcher_required
def pairs(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    filters = queries.PairFilters.from_query(request.GET)
    page, next_after = queries.find_pairs(scope.dataset, filters)
    kept = {key: value for key, value in request.GET.items() if key != "after"}
    return render_page(
        request,
        "dashboard/pairs.html",
        "pairs",
        scope,
        filters=filters,
        pairs=page,
        next_after=next_after,
        kept=kept,
        genres=genres("name"),
        splits=Split.values,
        labels=[*Label.values, "-"],
        patterns=[(name, text) for name, (text, _) in queries.PATTERNS.items()],
    )


@researcher_required
def reports(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    return render_page(
        request,
        "dashboard/reports.html",
        "reports",
        scope,
        premises=queries.reported_premises(scope.dataset),
        # The collection page's held count, by the same definition (dashboard.queries.collection).
        held_count=held_premise_count(scope.dataset),
        reported_not_held=queries.reported_not_held_count(scope.dataset),
    )


@researcher_required
@require_POST
def report_action(request: HttpRequest, premise_id: int) -> HttpResponseBase:
    """Release, edit or retire one reported premise; every action resolves its reports."""
    premise = found(queries.premise(premise_id), "No such premise.")
    action = request.POST.get("action")
    chosen = queries.just(premise)
    if action == "release":
        collection_services.release_premises(chosen)
        messages.success(request, f"Premise {premise.prompt_id} is back in the writing pool.")
    elif action == "retire":
        collection_services.retire_premises(chosen)
        messages.success(request, f"Premise {premise.prompt_id} is retired: nobody will be asked to write on it.")
    elif action == "edit":
        try:
            collection_services.edit_premise_text(premise, request.POST.get("text", ""))
        except collection_services.PremiseEditRefused as refused:
            messages.error(request, f"Premise {premise.prompt_id} was not changed: {refused.message_dict['text'][0]}")
        else:
            messages.success(request, f"Premise {premise.prompt_id} is corrected and back in the writing pool.")
    else:
        messages.error(request, "Choose release, edit or retire.")
    return redirect("dashboard:reports")
