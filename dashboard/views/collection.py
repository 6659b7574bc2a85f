from django.http import HttpRequest
from django.http.response import HttpResponseBase

from dashboard import charts
from dashboard.queries import collection as queries

from .common import Scope, render_page, researcher_required


@researcher_required
def collection(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    overview = queries.collection_overview(scope.within)
    held_filter = "status__exact=held" + (f"&dataset__id__exact={scope.dataset.pk}" if scope.dataset else "")
    return render_page(
        request,
        "dashboard/collection.html",
        "collection",
        scope,
        overview=overview,
        hourly_chart=charts.url("hourly", overview["hourly"], scope.query()),
        pairs_last_48h=sum(n for _, n in overview["hourly"]),
        held_filter=held_filter,
        imports=queries.recent_imports(scope=scope.within),
    )
