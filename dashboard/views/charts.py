"""A dashboard figure as an image (dashboard.charts): the <img> of a page points here."""

from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.cache import get_conditional_response, patch_cache_control
from django.views.decorators.http import require_GET

from dashboard import charts
from teams import access

from .common import researcher_required

# An address with the current version names one drawing for good; the browser keeps it a day.
VERSIONED_MAX_AGE = 24 * 3600


@researcher_required
@require_GET
def chart(request: HttpRequest, name: str) -> HttpResponseBase:
    if name not in charts.CHARTS:
        raise Http404("No such figure.")
    try:
        viewer = charts.Viewer(access.figure_teams(request.user))
        drawn, version = charts.svg(name, request.GET, viewer)
    except charts.NoFigure:
        raise Http404("Nothing to draw here.") from None
    etag = f'"{version}"'
    not_modified = get_conditional_response(request, etag=etag)
    if not_modified is not None:
        return not_modified
    response = HttpResponse(drawn, content_type="image/svg+xml; charset=utf-8")
    response["ETag"] = etag
    # Only the researcher's browser keeps it (the dashboard is theirs alone); an address whose
    # version is older than the numbers' is asked again each time (it is a page left open).
    if request.GET.get("v") == version:
        patch_cache_control(response, private=True, max_age=VERSIONED_MAX_AGE)
    else:
        patch_cache_control(response, private=True, no_cache=True)
    return response
