"""The pair browser and the queue of premises reported by writers."""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from collection import premise_pool
from corpus.models import Label, Split
from corpus.services import LabelRefused
from dashboard import bulk
from dashboard.queries import pair_page, reported_premises
from dashboard.queries import pairs as queries
from dashboard.queries.collection import held_premise_count
from dashboard.queries.pair_form import pair_form
from teams import access

from .common import Scope, render_page, researcher_required


@researcher_required
def pairs(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    form = pair_form(request.user)
    filters = queries.PairFilters.from_query(request.GET, genres={genre.slug for genre in form.genres})
    # Where the text's pairs come from, read once for the page and its count.
    text = queries.text_match(filters.text) if filters.text else None
    kept = {key: value for key, value in request.GET.items() if key not in ("after", "count")}
    # A count that stopped ("more than") is made exact on request: a bulk action takes the number
    # the page showed, so it is offered only beside an exact one.
    exact = request.GET.get("count") == "exact"
    # The filters' sets of pairs (a worker's, a flag's, a study's) read once for the count and the page.
    chosen = queries.select_pairs(scope.within, filters, text=text)
    matched = None
    if filters.narrows and queries.count_first(filters, chosen, exact=exact):
        matched = queries.count_matching(scope.within, filters, text=text, exact=exact, selection=chosen)
    page: list[pair_page.PairShown]
    next_after: int | None
    if matched is not None and matched.exact and matched.count == 0:
        page, next_after = [], None  # nothing to look for: a walk would read every pair to find no match
    else:
        page, next_after = pair_page.pair_rows(chosen.pairs, after=filters.after, writing_checks=form.writing_checks)
    if filters.narrows and matched is None:
        shown = (len(page), next_after is not None)
        matched = queries.count_matching(scope.within, filters, text=text, selection=chosen, first_page=shown)
    return render_page(
        request,
        "dashboard/pairs.html",
        "pairs",
        scope,
        filters=filters,
        pairs=page,
        next_after=next_after,
        kept=kept,
        genres=form.genres,
        splits=Split.values,
        labels=[*Label.values, "-"],
        patterns=[(name, text) for name, (text, _) in queries.PATTERNS.items()],
        flags=list(queries.FLAGS.items()),
        studies=access.in_teams(form.studies, scope.teams),
        matched=matched,
        bulk_history=form.bulk_history,
    )


# The bulk actions on the browser's result: name -> (what the done message says, what its undo says).
BULK_ACTIONS = {
    "retire": ("are retired: they leave snapshots and releases", "are back as they were"),
    "adjudicate": ("are sent to adjudication (its 'sent' queue)", "are out of the 'sent' queue again"),
    "exclude": ("are kept out of the snapshots exported from now on", "are in the next snapshots again"),
}


@researcher_required
@require_POST
def pairs_bulk(request: HttpRequest) -> HttpResponseBase:
    """Act on exactly the pairs the page counted with its filters and dataset (the form carries
    both, and the count): retire them (each an adjudication decision with the reason), send them to
    adjudication, or keep them out of snapshots; each as one batch in one transaction with its
    audit entry and its record in the history, whose every entry one click undoes."""
    scope = Scope(request, with_split=False, params=request.POST)
    filters = queries.PairFilters.from_query(request.POST)
    back = f"{reverse('dashboard:pairs')}?{urlencode({k: v for k, v in request.POST.items() if k in KEPT})}"
    if not filters.narrows or filters.unknown or scope.unknown:
        messages.error(request, "Choose the pairs with the filters first (a bulk action never takes every pair).")
        return redirect(back)
    action = request.POST.get("action", "")
    if action not in BULK_ACTIONS:
        messages.error(request, "Choose an action; nothing was changed.")
        return redirect(back)
    expected = request.POST.get("expected", "")
    if not expected.isdigit():
        messages.error(request, "The page's count of the pairs is missing: reload the page; nothing was changed.")
        return redirect(back)
    # Only pairs of the user's teams where they may do research (teams.access), in the page's scope.
    chosen = access.scoped(
        queries.matching_pairs(scope.within, filters), request.user, access.RESEARCH, via="dataset__team"
    )
    what = f"of writer {filters.writer}" if filters.writer else "matching the filters"
    described = f"{scope.label}: {what}"
    try:
        done = bulk.act_on_pairs(
            action,
            chosen,
            expected=int(expected),
            actor=request.user,
            reason=request.POST.get("reason", "")[:100],
            described=described,
        )
    except (LabelRefused, ValidationError) as refused:
        messages.error(request, f"Nothing was changed: {' '.join(getattr(refused, 'messages', [str(refused)]))}")
        return redirect(back)
    except bulk.BulkActionRefused as refused:
        messages.error(request, str(refused))
        return redirect(back)
    left = (
        f" ({done.unchanged} already were, or a decision stands on them: left as they were)" if done.unchanged else ""
    )
    messages.success(
        request,
        f"{done.action.changed} pairs {what} {BULK_ACTIONS[action][0]}{left}. Undo it in the history below if it was a slip.",
    )
    return redirect(back)


@researcher_required
@require_POST
def pairs_bulk_undo(request: HttpRequest) -> HttpResponseBase:
    """Undo one bulk action of the history (any of them, not only the last)."""
    try:
        record = bulk.undo_bulk_action(request.POST.get("token", ""), actor=request.user)
    except bulk.BulkActionRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(
            request,
            f"Undone: {record.undone_count} pairs {BULK_ACTIONS[record.kind][1]} (pairs decided since keep that decision).",
        )
    back = request.POST.get("next", "")
    return redirect(back if back.startswith("/") and not back.startswith("//") else reverse("dashboard:pairs"))


KEPT = ("dataset", "text", "genre", "split", "worker", "writer", "study", "flag", "gold", "pattern")


@researcher_required
def reports(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    return render_page(
        request,
        "dashboard/reports.html",
        "reports",
        scope,
        premises=reported_premises.reported_premises(scope.within),
        # The collection page's held count, by the same definition (dashboard.queries.collection).
        held_count=held_premise_count(scope.within),
        reported_not_held=reported_premises.reported_not_held_count(scope.within),
    )


@researcher_required
@require_POST
def report_action(request: HttpRequest, premise_id: int) -> HttpResponseBase:
    """Release, edit or retire one reported premise; every action resolves its reports."""
    premise = access.checked(
        reported_premises.premise(premise_id),
        request.user,
        access.RESEARCH,
        via="dataset__team",
        missing="No such premise.",
    )
    action = request.POST.get("action")
    chosen = reported_premises.just(premise)
    if action == "release":
        premise_pool.release_premises(chosen, actor=request.user)
        messages.success(request, f"Premise {premise.prompt_id} is back in the writing pool.")
    elif action == "retire":
        premise_pool.retire_premises(chosen, actor=request.user)
        messages.success(request, f"Premise {premise.prompt_id} is retired: nobody will be asked to write on it.")
    elif action == "edit":
        try:
            premise_pool.edit_premise_text(premise, request.POST.get("text", ""), actor=request.user)
        except premise_pool.PremiseEditRefused as refused:
            messages.error(request, f"Premise {premise.prompt_id} was not changed: {refused.message_dict['text'][0]}")
        else:
            messages.success(request, f"Premise {premise.prompt_id} is corrected and back in the writing pool.")
    else:
        messages.error(request, "Choose release, edit or retire.")
    return redirect("dashboard:reports")
