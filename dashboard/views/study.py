"""The study pages (issue 41 item 2): every study with its sessions, and one page per study with
its funnel, times, pay, live claims, what is left and costs; the sessions as a CSV.

Thin: every figure is read in `dashboard.queries.study`."""

import csv
from collections.abc import Iterator

from django.http import HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase

from crowd.models import Study
from dashboard.queries import study as queries
from markets.identity import arrival_checks
from validation.selectors import study_catch_shortfall

from .common import found, render_page, researcher_required


def study_or_404(slug: str) -> Study:
    return found(queries.study(slug), "No such study.")


@researcher_required
def studies(request: HttpRequest) -> HttpResponseBase:
    return render_page(request, "dashboard/studies.html", "studies", studies=queries.studies_with_counts())


@researcher_required
def study_page(request: HttpRequest, slug: str) -> HttpResponseBase:
    study = study_or_404(slug)
    return render_page(
        request,
        "dashboard/study.html",
        "studies",
        study=study,
        arrival_checks=arrival_checks(study),
        catch_shortfall=study_catch_shortfall(study),
        **queries.overview(study),
    )


class _Echo:
    """A file-like object whose write returns the line, for csv.writer into a streamed response."""

    def write(self, value: str) -> str:
        return value


@researcher_required
def study_sessions_csv(request: HttpRequest, slug: str) -> HttpResponseBase:
    study = study_or_404(slug)
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(queries.SESSION_CSV_COLUMNS)
        for row in queries.session_rows(study):
            yield writer.writerow(row)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{study.slug}-sessions.csv"'
    return response
