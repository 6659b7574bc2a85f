"""Quality pages: the researcher labelling page, the bonus ledger, and excluding workers; the rules
are in `quality.services`, `quality.bonuses` and `quality.selectors`."""

from collections.abc import Sequence
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from base.authenticated import AuthenticatedRequest
from base.permissions import EXCLUDE_WORKERS, LABEL_REFERENCE_PAIRS, PAY_BONUSES
from corpus.models import Pair
from corpus.services import LabelRefused
from crowd.models import Study, StudySession
from dashboard.queries import quality as queries
from dashboard.queries.common import pair as pair_named
from markets import connections as market_connections
from markets import hand_payments as market_payments
from markets import selectors as market_selectors
from quality import bonuses, selectors, services
from quality.bonus_lines import LinesPage, UnpaidLine, listed_bonuses
from teams import access
from validation.forms import CHOICES, KEYS

from .common import Scope, found, render_page, researcher_required
from .study import study_or_404

# Rows of the unpaid and per-worker lists shown at once; the pay form still lists every unpaid bonus.
BONUS_ROWS_PER_PAGE = 25


def _label_rows(pair: Pair, chosen: str) -> dict[str, Any]:
    name = "label"
    return {
        "number": 1,
        "pair": pair,
        "name": name,
        "missing": False,
        "options": [
            {"value": v, "text": text, "key": KEYS[v], "checked": v == chosen, "id": f"{name}-{KEYS[v]}"}
            for v, text in CHOICES
        ],
    }


@researcher_required(post_permission=LABEL_REFERENCE_PAIRS)
@require_http_methods(["GET", "POST"])
def label_pairs(request: AuthenticatedRequest) -> HttpResponse:
    """One pair at a time, keys 1/2/3 as in the validation task; the label is the researcher's
    reference label, and 'catch trial' mixes the pair into validation batches."""
    scope = Scope(request, with_split=False)
    pair_pk = request.POST.get("pair") or request.GET.get("pair")
    if pair_pk and not str(pair_pk).isdigit():
        raise Http404("No such pair.")
    pair = (
        access.checked(pair_named(pair_pk), request.user, access.LABEL, via="dataset__team", missing="No such pair.")
        if pair_pk
        else None
    )
    error = None
    if request.method == "POST":
        pair = found(pair, "No such pair.")
        try:
            reference = services.set_reference_label(
                pair,
                request.POST.get("label", ""),
                by=request.user,
                is_catch_trial=request.POST.get("is_catch_trial") == "on",
                note=request.POST.get("note", "").strip(),
            )
        except LabelRefused as refused:
            error = refused.message if request.POST.get("label") else "Choose one of the three labels (keys 1, 2, 3)."
        else:
            kind = "a catch trial" if reference.is_catch_trial else "a reference label"
            messages.success(request, f"Saved: {pair.pair_id} is {kind} with answer {reference.label}.")
            return redirect(
                reverse("dashboard:label_pairs") + (f"?dataset={scope.dataset.slug}" if scope.dataset else "")
            )
    if pair is None:
        pair = selectors.next_pair_to_label(scope.within)
    existing = queries.reference_label(pair)
    chosen = request.POST.get("label") or (existing.label if existing else "")
    return render_page(
        request,
        "dashboard/label_pairs.html",
        "label",
        scope,
        pair=pair,
        row=_label_rows(pair, chosen) if pair else None,
        existing=existing,
        is_catch_trial=(request.POST.get("is_catch_trial") == "on")
        if request.method == "POST"
        else bool(existing and existing.is_catch_trial),
        note=request.POST.get("note", existing.note if existing else ""),
        error=error,
        counts=selectors.reference_label_counts(scope.within),
        catch_trials=queries.recent_catch_trials(scope.within),
        status=400 if error else 200,
    )


# --- bonuses -----------------------------------------------------------------------------------


@researcher_required
def bonus_page(request: HttpRequest) -> HttpResponse:
    studies = access.kept(bonuses.study_summaries(), request.user, access.MONEY)
    asked = request.GET.get("study")
    # A study asked for by name shows its own bonuses or says it has none: never another study's
    # list and its "mark paid" button.
    study = next((s for s in studies if s.slug == asked), None if asked else (studies[0] if studies else None))
    # Bonuses the market's API is paying are in flight: in no file, not on the "mark paid" form.
    money = market_selectors.bonus_page_money(study) if study else {}
    # The pay form names its list by a fingerprint; its rows, a page at a time; its summaries, per
    # worker's session and cause: none of the three reads every unpaid bonus into the page.
    groups = money["confirmable_groups"] if study else []
    listed = listed_bonuses(groups)
    lines: Sequence[UnpaidLine] = LinesPage(money["confirmable"], listed.count) if listed.count else []
    unpaid_page = Paginator(lines, BONUS_ROWS_PER_PAGE).get_page(request.GET.get("upage"))
    # Held codes' bonuses wait apart until the hold is decided; none in the summary row, none to list.
    summary: Any = study
    held = bonuses.held_back_page(study, summary.held_count) if study else []
    held_page = Paginator(held, BONUS_ROWS_PER_PAGE).get_page(request.GET.get("hpage"))
    # The money per worker is the ledger's now; the catch figures beside it are the figure cache's.
    totals = bonuses.WorkerTotals(study, queries.bonus_catch_standings(study)) if study else []
    totals_page = Paginator(totals, BONUS_ROWS_PER_PAGE).get_page(request.GET.get("wpage"))
    accounts = bonuses.market_accounts(groups)
    left_out_page = Paginator(accounts["left_out_rows"], BONUS_ROWS_PER_PAGE).get_page(request.GET.get("lpage"))
    # Excluded and flagged workers are marked on both lists, so none is paid unseen.
    flags_as_of = queries.bonus_flags_as_of() if study else None
    shown_workers = [entry.worker_id for entry in unpaid_page] + [row["id"] for row in totals_page]
    marks = queries.bonus_marks(shown_workers, team_id=study.dataset.team_id) if study else {}
    for entry in unpaid_page:
        entry.marks = marks.get(entry.worker_id, [])
    for row in totals_page:
        row["marks"] = marks.get(row["id"], [])
    return render_page(
        request,
        "dashboard/bonuses.html",
        "bonuses",
        studies=studies,
        study=study,
        asked_without_bonuses=asked if asked and study is None else "",
        listed=listed,
        unpaid_page=unpaid_page,
        unpaid_total=bonuses.money(listed.amount),
        totals=totals,
        totals_page=totals_page,
        unpaid_causes=bonuses.unpaid_by_cause(groups),
        accounts=accounts,
        left_out_page=left_out_page,
        in_flight_api=money.get("api", 0),
        claimed_by_files=money.get("files", 0),
        set_aside=money.get("aside", []),
        figures=money.get("figures"),
        held_page=held_page,
        flags_as_of=flags_as_of,
        held_total=bonuses.money(summary.held_amount) if study else "",
        # A discretionary bonus goes to a participant chosen by the ids the pages show.
        bonus_recipients=queries.bonus_recipients(study) if study else {"rows": [], "total": 0},
        # A dry pool serves no catch trial (never a repeat): the researcher is told here.
        catch_pools=queries.catch_pools_of_active_studies(request.user, access.MONEY),
    )


@researcher_required
def bonus_export(request: HttpRequest, slug: str, market: str) -> HttpResponse:
    study = study_or_404(request, slug, access.MONEY)
    if market not in bonuses.PAYMENT_FILES:
        raise Http404("Exports: prolific, mturk or left-out.")
    write, name = {
        "prolific": (bonuses.prolific_bulk_bonus_csv, "prolific-bulk-bonus"),
        "mturk": (bonuses.mturk_bonus_csv, "mturk-bonus"),
        "left-out": (bonuses.left_out_csv, "bonuses-in-no-market-file"),
    }[market]
    # Downloading a market's file claims its bonuses: the pay button leaves them to the researcher.
    body = write(market_payments.claim_for_file(study, market))
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slug}-{name}.csv"'
    return response


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def bonus_pay(request: AuthenticatedRequest, slug: str) -> HttpResponse:
    study = study_or_404(request, slug, access.MONEY)
    if request.POST.get("confirm") != "paid":
        messages.error(
            request,
            "Nothing was marked paid: tick the box that says you paid these bonuses on the market (the sum is beside it).",
        )
        return redirect(reverse("dashboard:bonuses") + f"?study={study.slug}")
    # The page's form names its whole list by a fingerprint; a client may name bonus ids instead.
    listed = request.POST.get("listed")
    try:
        if listed is not None:
            outcome = market_payments.mark_listed_paid_by_hand(study, listed, by=request.user)
        else:
            outcome = market_payments.mark_paid_by_hand(study, request.POST.getlist("bonus"), by=request.user)
    except (bonuses.PaymentRefused, ValueError) as refused:
        messages.error(
            request,
            str(refused) if isinstance(refused, bonuses.PaymentRefused) else "Bad bonus ids; nothing was marked paid.",
        )
    else:
        text = f"Marked {outcome['paid']} bonus(es) paid: {bonuses.money(outcome['amount'])} {study.bonus_currency}."
        if outcome["already_paid"]:
            text += f" {outcome['already_paid']} were already paid and were left alone."
        messages.success(request, text)
    return redirect(reverse("dashboard:bonuses") + f"?study={study.slug}")


def _bonus_recipient(study: Study, chosen: str, typed: str) -> tuple[StudySession | None, str]:
    """The session the give form names: chosen from the study's list (its own value), or typed as
    the pages show it (a participant id or a market session id); else None and what to do."""
    if chosen:
        session = queries.session_of_study(study, int(chosen)) if chosen.isdigit() else None
        return session, "" if session else "That session is not one of this study's: choose one from the list."
    if not typed.strip():
        return None, "Choose a participant from the list, or type their participant id or session id."
    found_sessions = queries.sessions_shown_as(study, typed)
    if len(found_sessions) == 1:
        return found_sessions[0], ""
    if not found_sessions:
        return None, f"No session of this study has the participant id or session id “{typed.strip()}”."
    return None, (
        f"“{typed.strip()}” came to this study {len(found_sessions)} times: choose the session from the list."
    )


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def bonus_give(request: AuthenticatedRequest, slug: str) -> HttpResponse:
    study = study_or_404(request, slug, access.MONEY)
    session, problem = _bonus_recipient(study, request.POST.get("session", ""), request.POST.get("participant", ""))
    if session is None:
        messages.error(request, f"{problem} No bonus was given.")
        return redirect(reverse("dashboard:bonuses") + f"?study={study.slug}")
    try:
        entry = bonuses.give_discretionary_bonus(
            session, request.POST.get("amount", ""), request.POST.get("reason", ""), by=request.user
        )
    except bonuses.PaymentRefused as refused:
        messages.error(request, str(refused))
    else:
        messages.success(request, f"Gave {entry.worker} a bonus of {entry.amount} {entry.currency}: it is owed now.")
    return redirect(reverse("dashboard:bonuses") + f"?study={study.slug}")


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def bonus_release(request: AuthenticatedRequest, slug: str) -> HttpResponse:
    """The researcher did not pay the downloaded file (or fixed what the market refused in the
    set-aside bonuses): those bonuses are owed again."""
    study = study_or_404(request, slug, access.MONEY)
    aside = request.POST.get("what") == "aside"
    try:
        released = (market_payments.release_set_aside if aside else market_payments.release_file_claims)(study)
    except market_connections.ConnectionRefused as refused:
        messages.error(request, str(refused))
    else:
        which = "set aside" if aside else "of downloaded files"
        messages.success(request, f"Released {released} bonus(es) {which}: they are owed again.")
    return redirect(reverse("dashboard:bonuses") + f"?study={study.slug}")


# --- excluding workers -------------------------------------------------------------------------


@researcher_required(post_permission=EXCLUDE_WORKERS)
@require_POST
def worker_exclusion(request: HttpRequest) -> HttpResponse:
    action = request.POST.get("action")
    if action not in ("exclude", "include"):
        messages.error(request, "Choose exclude or include.")
        return redirect("dashboard:workers")
    # An exclusion is a team's: the one the form names, or the user's only research team.
    teams = access.teams_acted_on(request.user, access.RESEARCH)
    chosen = request.POST.get("team", "")
    if chosen:
        teams = [team for team in teams if str(team) == chosen]  # another team's id: none, as unknown
    try:
        if len(teams) != 1:
            raise LabelRefused("Choose the team whose data they leave; nothing changed.")
        outcome = services.set_excluded(
            request.POST.getlist("worker"),
            action == "exclude",
            teams=teams,
            by=request.user,
            reason=request.POST.get("reason", "").strip()[:500],
        )
    except (LabelRefused, ValueError) as refused:
        messages.error(
            request, refused.message if isinstance(refused, LabelRefused) else "Bad worker ids; nothing changed."
        )
    else:
        verb = "Excluded" if action == "exclude" else "Included again"
        text = f"{verb}: {outcome.changed} worker(s)."
        if outcome.changed:
            text += f" Gold labels recounted: {outcome.pairs_fixed} pair(s) changed."
            if action == "exclude":
                text += " Pairs that lost a validation label are back in the validation pool."
        messages.success(request, text)
    next_url = request.POST.get("next", "")
    return redirect(next_url if next_url.startswith("/dashboard/") else "dashboard:workers")
