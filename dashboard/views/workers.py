from django.core.paginator import Paginator
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from dashboard.queries import workers as queries
from dashboard.queries.quality import worker_quality_page
from teams import access

from .common import Scope, render_page, researcher_required

WORKERS_PER_PAGE = 100


def next_sort(current: str, key: str, numeric: bool) -> str:
    """Clicking the sorted column flips it; another column sorts numbers high-first, names A–Z."""
    if current == f"-{key}":
        return key
    if current == key:
        return f"-{key}"
    return f"-{key}" if numeric else key


@researcher_required
def workers(request: HttpRequest) -> HttpResponseBase:
    scope = Scope(request)
    rows, sort = queries.workers_overview(scope.within, sort=request.GET.get("sort", "-pairs_written"))
    page = Paginator(rows, WORKERS_PER_PAGE).get_page(request.GET.get("page"))
    typing = queries.typing_of_writers([row["id"] for row in page.object_list], scope.teams_within)
    page.object_list = [{**row, "typing": typing.get(row["id"])} for row in page.object_list]
    quality_page, flags_as_of, excluded = worker_quality_page(scope.within, request.GET.get("qpage"), WORKERS_PER_PAGE)
    columns = [
        {
            "key": key,
            "heading": heading,
            "numeric": numeric,
            "next_sort": next_sort(sort, key, numeric),
            "sorted": sort.lstrip("-") == key,
            "descending": sort.startswith("-"),
        }
        for key, (heading, numeric) in queries.WORKER_COLUMNS.items()
    ]
    return render_page(
        request,
        "dashboard/workers.html",
        "workers",
        scope,
        page=page,
        columns=columns,
        sort=sort,
        worker_count=len(rows),
        # A page of them (its own `qpage`), so the page's size does not grow with the crowd.
        quality=quality_page,
        flags_as_of=flags_as_of,  # the maintained rows' time: the figures may be a little older than the page
        excluded=excluded,
        exclusion_teams=access.teams_to_choose(request.user, access.RESEARCH),
        **queries.authorship_figures(scope.teams_within),
        correlated_groups=queries.correlated_groups(scope.within),
    )
