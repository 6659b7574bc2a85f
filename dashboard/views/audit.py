"""The audit log's page and its CSV: the entries of the user's teams, filtered (audit.selectors)."""

from datetime import datetime

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_GET

from audit import selectors
from audit.models import AuditEntry
from dashboard.queries import audit as queries
from teams import access

from .common import render_page, researcher_required

SHOWN = 200
FILTERS = ("action", "actor", "subject_type", "dataset", "since")


def _entries(request: HttpRequest) -> tuple[QuerySet[AuditEntry], dict[str, str]]:
    chosen = {name: request.GET.get(name, "").strip() for name in FILTERS}
    try:
        since = datetime.fromisoformat(chosen["since"]) if chosen["since"] else None
    except ValueError:
        since = None
    rows = selectors.entries(
        access.team_ids(request.user),
        action=chosen["action"],
        actor=chosen["actor"],
        subject_type=chosen["subject_type"],
        dataset=chosen["dataset"],
        since=since,
    )
    return rows, chosen


@researcher_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponseBase:
    rows, chosen = _entries(request)
    query = "&".join(f"{name}={value}" for name, value in chosen.items() if value)
    return render_page(request, "dashboard/audit.html", "audit", entries=rows[:SHOWN], chosen=chosen, query=query)


@researcher_required
@require_GET
def audit_csv(request: HttpRequest) -> HttpResponseBase:
    # An export: the team's exporting roles only (an annotator sees the page, not the file).
    rows, _ = _entries(request)
    text = queries.entries_csv(rows, access.team_ids(request.user, access.EXPORT))
    response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="audit-log.csv"'
    return response
