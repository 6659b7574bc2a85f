"""Reading the audit log: filtered, for the dashboard page, its CSV and the API."""

import io
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import Q, QuerySet

from base import spreadsheet_safe

from .models import AuditEntry

CSV_COLUMNS = ["at", "actor", "action", "subject_type", "subject_id", "subject", "reason", "before", "after", "team_id"]


def entries(
    team_ids: set[int] | None,
    *,
    action: str = "",
    actor: str = "",
    subject_type: str = "",
    dataset: str = "",
    since: datetime | None = None,
) -> QuerySet[AuditEntry]:
    """The entries of the given teams (None: every team), narrowed by the filters that are set."""
    rows = AuditEntry.objects.all()
    if team_ids is not None:
        # An entry of no team (a shared worker's exclusion) concerns every team.
        rows = rows.filter(Q(team_id__in=team_ids) | Q(team_id__isnull=True))
    if action:
        rows = rows.filter(action__startswith=action)
    if actor:
        rows = rows.filter(actor=actor)
    if subject_type:
        rows = rows.filter(subject_type=subject_type)
    if dataset:
        rows = rows.filter(dataset_slugs__contains=[dataset])
    if since:
        rows = rows.filter(at__gte=since)
    return rows


def as_csv(rows: Iterable[AuditEntry]) -> str:
    """The entries as CSV; a reason or subject typed as a formula stays text in a spreadsheet."""
    out = io.StringIO()
    writer = spreadsheet_safe.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        writer.writerow([row.at.isoformat() if col == "at" else getattr(row, col) for col in CSV_COLUMNS])
    return out.getvalue()


def summary_for_datasets(slugs: Iterable[str], until: datetime | None = None) -> list[dict[str, Any]]:
    """What was decided about these datasets' data, by action (a release's datasheet): count, first, last."""
    touches = Q(pk__in=[])
    for slug in slugs:
        touches |= Q(dataset_slugs__contains=[slug])
    # Decisions on the data, not the exports made of it: two snapshots of the same data, with no
    # decision between them, give the same datasheet.
    rows = (
        AuditEntry.objects.filter(touches)
        .exclude(action__startswith="snapshot.")
        .exclude(action__startswith="release.")
    )
    if until is not None:
        rows = rows.filter(at__lte=until)
    counts: Counter[str] = Counter()
    first: dict[str, datetime] = {}
    last: dict[str, datetime] = {}
    for action, at in rows.values_list("action", "at"):
        counts[action] += 1
        first[action] = min(first.get(action, at), at)
        last[action] = max(last.get(action, at), at)
    return [
        {
            "action": action,
            "count": counts[action],
            "first": first[action].isoformat(),
            "last": last[action].isoformat(),
        }
        for action in sorted(counts)
    ]


def teams_of_named(action: str, names: Iterable[str]) -> dict[str, int | None]:
    """{name: team} of the entries of `action` whose `after` names one of `names` (the latest
    entry of each name): the team of what has no row of its own, such as a release in file storage
    (`release.published`)."""
    rows = AuditEntry.objects.filter(action=action, after__name__in=list(names)).order_by("at", "pk")
    return {str(name): team_id for name, team_id in rows.values_list("after__name", "team_id")}
