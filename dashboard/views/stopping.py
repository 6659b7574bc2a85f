"""Stopping rules per dataset split (docs/quality.md "Stopping rules"): choose one, and
preview what each rule would have saved on a split's stored label sequences."""

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from corpus.models import Split, StoppingRule
from corpus.stopping_policies import PolicyRefused, set_stopping_policy
from dashboard.queries import stopping as queries
from dashboard.queries.common import datasets
from teams import access

from .common import render_page, researcher_required

N = TypeVar("N", int, float)


def _number(text: str | None, kind: Callable[[str], N]) -> N | None:
    try:
        return kind(text) if text else None  # None and "" alike
    except ValueError:
        return None


@researcher_required
@require_http_methods(["GET", "POST"])
def stopping(request: HttpRequest) -> HttpResponseBase:
    # The user's teams' datasets only (teams.access): another team's slug is as unknown as a typo.
    known = {dataset.slug: dataset for dataset in access.kept(datasets(), request.user)}
    if request.method == "POST":
        dataset = known.get(request.POST.get("dataset", ""))
        split, rule = request.POST.get("split", ""), request.POST.get("rule", "")
        if dataset is None or split not in Split.values or rule not in StoppingRule.values:
            messages.error(request, "Choose a dataset, a split and a rule; nothing was changed.")
            return redirect("dashboard:stopping")
        held_out = split in (Split.DEV, Split.TEST)
        if held_out and rule == StoppingRule.CONFIDENT and not request.POST.get("confirm_held_out"):
            messages.warning(
                request,
                f"Not saved: the confident rule on {split} lets gold labels of evaluation data change after "
                "fewer than five labels, and its agreement figures then cover only the pairs that still take "
                "five. Tick “Use it on dev or test anyway” to save it.",
            )
            return redirect("dashboard:stopping")
        try:
            policy, changed, stopped = set_stopping_policy(
                dataset,
                split,
                rule,
                threshold=_number(request.POST.get("threshold"), float),
                max_labels=_number(request.POST.get("max_labels"), int),
            )
        except PolicyRefused as refused:
            messages.error(request, f"Not saved: {'; '.join(f'{k}: {v[0]}' for k, v in refused.message_dict.items())}")
            return redirect("dashboard:stopping")
        messages.success(
            request,
            f"{dataset.slug} {split}: {policy.get_rule_display()}. {changed} pairs follow it now; {stopped} stopped at once.",
        )
        if held_out and rule != StoppingRule.FIXED:
            messages.warning(
                request,
                f"{split} now stops early: Fleiss κ and the agreement table cover only its pairs with five labels.",
            )
        return redirect("dashboard:stopping")
    preview = None
    dataset = known.get(request.GET.get("preview", ""))
    split = request.GET.get("split", Split.DEV)
    if dataset is not None and split in Split.values:
        preview = {"dataset": dataset, "split": split, **queries.replay_preview(dataset, split)}
    return render_page(
        request,
        "dashboard/stopping.html",
        "stopping",
        rows=queries.policy_rows(list(known.values())),
        rules=StoppingRule.choices,
        splits=Split.values,
        datasets=list(known.values()),
        preview=preview,
    )
