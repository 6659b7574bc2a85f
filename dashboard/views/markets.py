"""A study's crowd market panel: the connection, approvals and rejections, paying bonuses, lists.

Thin: the rules are in `markets.connections`, `reviews`, `payments`, `lists`, the reads in `markets.selectors`.
"""

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from base.permissions import PAY_BONUSES
from crowd.models import Study
from markets import connections, lists, payments, reviews, selectors
from markets.clients import MarketError
from markets.models import BatchState, MarketConnection
from markets.sealing import SealingUnavailable
from teams import access

from .common import found, render_page, researcher_required
from .study import study_or_404

# What goes wrong talking to a market, said in one line on the page.
Trouble = tuple[type[Exception], ...]
MARKET_TROUBLE: Trouble = (MarketError, SealingUnavailable, connections.ConnectionRefused)
NOT_CONNECTED = "Connect the study to a market first."


def _back(study: Study) -> HttpResponseBase:
    return redirect(reverse("dashboard:markets") + f"?study={study.slug}")


def _act(
    request: HttpRequest, slug: str, act: Callable[[Study], tuple[bool, str]], trouble: Trouble = MARKET_TROUBLE
) -> HttpResponseBase:
    """Back to the study's panel after `act` on it, saying what it did (`act` answers whether all
    went well, and one line) or what stood in the way (`trouble`)."""
    study = study_or_404(request, slug, access.MONEY)
    try:
        ok, line = act(study)
    except trouble as refused:
        ok, line = False, str(refused)
    (messages.success if ok else messages.error)(request, line)
    return _back(study)


def _on_connection(
    request: HttpRequest, slug: str, act: Callable[[MarketConnection], tuple[bool, str]]
) -> HttpResponseBase:
    """`_act` on the study's market connection; with none, the page says to connect first."""

    def on_study(study: Study) -> tuple[bool, str]:
        connection = connections.connection_of(study)
        return act(connection) if connection is not None else (False, NOT_CONNECTED)

    return _act(request, slug, on_study)


@researcher_required
def markets(request: HttpRequest) -> HttpResponseBase:
    studies = access.kept(selectors.connected_studies(), request.user, access.MONEY)
    study = next((s for s in studies if s.slug == request.GET.get("study")), studies[0] if studies else None)
    panel = selectors.panel(study) if study else {}
    webhook_url = (
        request.build_absolute_uri(reverse("markets:prolific_webhook", args=[panel["connection"].webhook_key]))
        if panel.get("connection")
        else ""
    )
    return render_page(
        request,
        "dashboard/markets.html",
        "markets",
        studies=studies,
        study=study,
        webhook_url=webhook_url,
        categories=reviews.REJECTION_CATEGORIES,
        **panel,
    )


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_connection(request: HttpRequest, slug: str) -> HttpResponseBase:
    post = request.POST

    def save(study: Study) -> tuple[bool, str]:
        connections.save_connection(
            study,
            market=post.get("market", ""),
            market_study_id=post.get("market_study_id", ""),
            hit_type_id=post.get("hit_type_id", ""),
            mturk_live=post.get("mturk_live") == "on",
            token=post.get("token", ""),
            access_key_id=post.get("access_key_id", ""),
            secret_access_key=post.get("secret_access_key", ""),
            webhook_secret=post.get("webhook_secret", ""),
            approve_automatically=post.get("approve_automatically") == "on",
            qualified_list_id=post.get("qualified_list_id", ""),
            excluded_list_id=post.get("excluded_list_id", ""),
            by=request.user,
        )
        return True, "Saved the market connection (credentials sealed). Test it with the button below."

    return _act(request, slug, save)


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_test(request: HttpRequest, slug: str) -> HttpResponseBase:
    return _on_connection(request, slug, lambda connection: connections.test_connection(connection, by=request.user))


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_approve(request: HttpRequest, slug: str) -> HttpResponseBase:
    def approve(study: Study) -> tuple[bool, str]:
        outcome = reviews.approve_sessions(study, request.POST.getlist("session") or None, by=request.user)
        return not outcome.failed, outcome.line("Approved")

    return _act(request, slug, approve, (*MARKET_TROUBLE, ValueError))


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_reject(request: HttpRequest, slug: str, session_id: int) -> HttpResponseBase:
    def reject(study: Study) -> tuple[bool, str]:
        session = found(selectors.session_of(study, session_id), "No such session in this study.")
        outcome = reviews.reject_session(
            session, request.POST.get("reason", ""), category=request.POST.get("category", "OTHER"), by=request.user
        )
        return not outcome.failed, outcome.line("Rejected")

    return _act(request, slug, reject)


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_pay(request: HttpRequest, slug: str) -> HttpResponseBase:
    def pay(study: Study) -> tuple[bool, str]:
        outcome = payments.pay_owed_bonuses(study, by=request.user)
        return not outcome.refused, outcome.line(study.bonus_currency)

    return _act(request, slug, pay)


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_reconcile(request: HttpRequest, slug: str) -> HttpResponseBase:
    def reconcile(connection: MarketConnection) -> tuple[bool, str]:
        outcome = payments.reconcile_payments(connection, by=request.user, now_please=True)
        return True, "Reconciled with the market's record. " + outcome.line(connection.study.bonus_currency)

    return _on_connection(request, slug, reconcile)


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_batch_unpaid(request: HttpRequest, slug: str, batch_id: int) -> HttpResponseBase:
    def unpaid(study: Study) -> tuple[bool, str]:
        batch = found(selectors.batch_of(study, batch_id), "No such bulk bonus in this study.")
        freed = payments.resolve_unpaid_batch(batch, by=request.user)
        batch = found(selectors.batch_of(study, batch_id), "No such bulk bonus in this study.")  # as resolved
        if batch.state == BatchState.PAID:
            return False, f"Prolific's record shows bulk bonus {batch.market_bulk_id} paid: confirmed, nothing freed."
        return True, f"Bulk bonus {batch.market_bulk_id} marked as not paid: {freed} bonus(es) may be paid again."

    return _act(request, slug, unpaid, (*MARKET_TROUBLE, payments.NotPaidRefused))


@researcher_required(post_permission=PAY_BONUSES)
@require_POST
def market_lists(request: HttpRequest, slug: str) -> HttpResponseBase:
    return _on_connection(
        request,
        slug,
        lambda connection: (True, f"Lists sent to the market: {lists.sync_lists(connection, by=request.user)}."),
    )
