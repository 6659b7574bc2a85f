"""Reads of the authorship app: who writes like a machine (the workers page)."""

from collections.abc import Iterable

from django.db.models import Count, Q

from .models import WritingEvidence


def typing_flags_by_worker(worker_ids: Iterable[int]) -> dict[int, dict[str, int]]:
    """Per worker: hypotheses with a typing record, how many are flagged, how many came with no evidence."""
    rows = (
        WritingEvidence.objects.filter(worker_id__in=list(worker_ids))
        .values("worker_id")
        .annotate(
            written=Count("id"),
            flagged=Count("id", filter=Q(flagged=True)),
            no_evidence=Count("id", filter=Q(has_evidence=False)),
        )
        .order_by()
    )
    return {
        row["worker_id"]: {"written": row["written"], "flagged": row["flagged"], "no_evidence": row["no_evidence"]}
        for row in rows
    }
