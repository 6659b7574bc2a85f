"""The pair browser and the queue of premises reported by writers."""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from collection import services as collection_services
from corpus.models import Label, Pair, Split
from corpus.services import LabelRefused
from dashboard.queries import pairs as queries
from dashboard.queries.collection import held_premise_count
from dashboard.queries.common import genres
from modeling.snapshots import services as snapshot_services
from teams import access
from validation import adjudication

from .common import Scope, render_page, researcher_required


@researcher_required
def pairs(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    filters = queries.PairFilters.from_query(request.GET)
    page, next_after = queries.find_pairs(scope.within, filters)
    kept = {key: value for key, value in request.GET.items() if key != "after"}
    matched = queries.matching_pairs(scope.within, filters).count() if filters.narrows else None
    last_bulk = request.session.get(LAST_BULK)
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
        flags=list(queries.FLAGS.items()),
        studies=access.in_teams(queries.studies(), scope.teams),
        matched=matched,
        last_bulk=last_bulk,
        last_bulk_done=BULK_ACTIONS.get(last_bulk.get("action", "retire"), ("",))[0].split(":")[0] if last_bulk else "",
    )


# The session's last bulk action: {"token", "count", "what", "action"}, for its undo on the page.
LAST_BULK = "pairs_last_bulk"
# The bulk actions on the browser's result: name -> (what the done message says, what its undo says).
BULK_ACTIONS = {
    "retire": ("are retired: they leave snapshots and releases", "are back as they were"),
    "adjudicate": ("are sent to adjudication (its 'sent' queue)", "are out of the 'sent' queue again"),
    "exclude": ("are kept out of the snapshots exported from now on", "are in the next snapshots again"),
}


def _act(action: str, pairs: QuerySet[Pair], request: HttpRequest) -> tuple[int, int, str]:
    """(pairs changed, pairs left as they were, the batch token) of one bulk action."""
    reason = request.POST.get("reason", "")[:100]
    if action == "retire":
        count, token = adjudication.retire_pairs(pairs, researcher=request.user, reason=reason)
        return count, 0, token
    if action == "adjudicate":
        return adjudication.send_to_adjudication(pairs, researcher=request.user, reason=reason)
    return snapshot_services.exclude_from_snapshots(pairs, researcher=request.user, reason=reason)


@researcher_required
@require_POST
def pairs_bulk(request: HttpRequest) -> HttpResponseBase:
    """Act on every pair the browser's filters select (issue 54): retire them (each an adjudication
    decision with the reason), send them to adjudication, or keep them out of snapshots; each as one
    batch in one transaction with its audit entry, that one click undoes."""
    scope = Scope(request, with_split=False)
    filters = queries.PairFilters.from_query(request.POST)
    back = f"{reverse('dashboard:pairs')}?{urlencode({k: v for k, v in request.POST.items() if k in KEPT})}"
    if not filters.narrows or filters.unknown:
        messages.error(request, "Choose the pairs with the filters first (a bulk action never takes every pair).")
        return redirect(back)
    action = request.POST.get("action", "")
    if action not in BULK_ACTIONS:
        messages.error(request, "Choose an action; nothing was changed.")
        return redirect(back)
    # Only pairs of the user's teams where they may do research (teams.access).
    chosen = access.scoped(
        queries.matching_pairs(scope.dataset, filters), request.user, access.RESEARCH, via="dataset__team"
    )
    try:
        count, unchanged, token = _act(action, chosen, request)
    except (LabelRefused, ValidationError) as refused:
        messages.error(request, f"Nothing was changed: {' '.join(getattr(refused, 'messages', [str(refused)]))}")
        return redirect(back)
    what = f"of writer {filters.writer}" if filters.writer else "matching the filters"
    request.session[LAST_BULK] = {"token": token, "count": count, "what": what, "action": action}
    left = f" ({unchanged} already were, or a decision stands on them: left as they were)" if unchanged else ""
    messages.success(request, f"{count} pairs {what} {BULK_ACTIONS[action][0]}{left}. Undo it below if it was a slip.")
    return redirect(back)


@researcher_required
@require_POST
def pairs_bulk_undo(request: HttpRequest) -> HttpResponseBase:
    last = request.session.get(LAST_BULK)
    token = request.POST.get("token", "")
    if not last or last.get("token") != token:
        messages.error(request, "That bulk action is not this session's last one; nothing was changed.")
    else:
        action = last.get("action", "retire")
        if action == "adjudicate":
            undone = adjudication.unsend(token, researcher=request.user)
        elif action == "exclude":
            undone = snapshot_services.include_again(token, researcher=request.user)
        else:
            undone = adjudication.undo_bulk(token, researcher=request.user)
        request.session.pop(LAST_BULK, None)
        messages.success(
            request,
            f"Undone: {undone} pairs {BULK_ACTIONS.get(action, BULK_ACTIONS['retire'])[1]}"
            " (pairs decided since keep that decision).",
        )
    return redirect(request.POST.get("next") or reverse("dashboard:pairs"))


KEPT = ("dataset", "text", "genre", "split", "worker", "writer", "study", "flag", "gold", "pattern")


@researcher_required
def reports(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    return render_page(
        request,
        "dashboard/reports.html",
        "reports",
        scope,
        premises=queries.reported_premises(scope.within),
        # The collection page's held count, by the same definition (dashboard.queries.collection).
        held_count=held_premise_count(scope.within),
        reported_not_held=queries.reported_not_held_count(scope.within),
    )


@researcher_required
@require_POST
def report_action(request: HttpRequest, premise_id: int) -> HttpResponseBase:
    """Release, edit or retire one reported premise; every action resolves its reports."""
    premise = access.checked(
        queries.premise(premise_id), request.user, access.RESEARCH, via="dataset__team", missing="No such premise."
    )
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
