"""The cost page: what the studies spent, what it bought, and what the rest will cost (every
figure is read in `dashboard.queries.costs`)."""

from django.http import HttpRequest
from django.http.response import HttpResponseBase

from dashboard.queries import costs as queries

from .common import Scope, render_page, researcher_required


@researcher_required
def costs(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request, with_split=False)
    return render_page(request, "dashboard/costs.html", "costs", scope, **queries.cost_overview(scope.within))
