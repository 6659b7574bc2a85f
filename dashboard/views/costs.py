"""The cost page (issue 24.3): what the studies spent, what it bought, and what the rest will cost.

Thin: every figure is read in `dashboard.queries.costs`."""

from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.shortcuts import render

from dashboard.queries import costs as queries

from .common import Scope, page_context, researcher_required


@researcher_required
def costs(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    return render(
        request, "dashboard/costs.html", page_context(request, "costs", scope, **queries.cost_overview(scope.dataset))
    )
