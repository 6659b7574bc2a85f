"""The audit log's CSV: the entries shown, narrowed to the teams whose data the user may export."""

from django.db.models import Q, QuerySet

from audit import selectors
from audit.models import AuditEntry


def entries_csv(rows: QuerySet[AuditEntry], exporting: set[int] | None) -> str:
    """`rows` as CSV, those of the teams in `exporting` only (None: every team); an entry of no
    team (a shared worker's exclusion) is every team's."""
    if exporting is not None:
        rows = rows.filter(Q(team_id__in=exporting) | Q(team_id__isnull=True))
    return selectors.as_csv(rows.iterator())
