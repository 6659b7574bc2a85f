"""Reads of the authorship app: who writes like a machine (the workers page)."""

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db.models import Count, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from .judgements import Flag
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


# The judgements a snapshot's manifest counts, in the order it lists them (no-evidence is counted
# apart, as the pairs without a record).
COUNTED_FLAGS = (
    Flag.PASTED,
    Flag.NOT_TYPED,
    Flag.MACHINE_CADENCE,
    Flag.PASTED_AFTER_AWAY,
    Flag.REPEATED,
)


def typing_evidence_counts(pair_ids: Any) -> dict[str, Any]:
    """Of these pairs (ids, or a query of them): how many have a typing record ("recorded"), how
    many of those came with the browser's evidence, how many are flagged, and how many carry each
    judgement's flag. One grouped read: the records are grouped by their flag list (a handful of
    distinct lists), the counts summed here."""
    rows = (
        WritingEvidence.objects.filter(pair_id__in=pair_ids)
        .values("has_evidence", "flagged", "flags")
        .annotate(n=Count("id"))
        .order_by()
    )
    per_flag = dict.fromkeys((flag.value for flag in COUNTED_FLAGS), 0)
    recorded = with_evidence = flagged = 0
    for row in rows:
        recorded += row["n"]
        with_evidence += row["n"] if row["has_evidence"] else 0
        flagged += row["n"] if row["flagged"] else 0
        for flag in set(row["flags"] or ()):
            if flag in per_flag:
                per_flag[flag] += row["n"]
    return {"recorded": recorded, "with_evidence": with_evidence, "flagged": flagged, "flags": per_flag}


def typing_flags_of_pairs(pair_ids: Any) -> dict[int, list[str]]:
    """{pair id: its hypothesis's typing flags, sorted}, for the pairs (ids, or a query of them)
    whose record has some."""
    rows = WritingEvidence.objects.filter(pair_id__in=pair_ids).values_list("pair_id", "flags")
    return {pair_id: sorted(flags) for pair_id, flags in rows if flags}


# The flagged share over time shows the last weeks, not a study's whole history on one page.
SHARE_OVER_TIME_DAYS = 30


def typing_flagged_share_by_study_day(*, days: int = SHARE_OVER_TIME_DAYS) -> list[dict[str, Any]]:
    """Per study and day (UTC, the last `days` days, newest first): hypotheses with a typing record,
    how many are flagged and their share. One grouped read; records outside a study are left out."""
    since = timezone.now() - timedelta(days=days)
    rows = (
        WritingEvidence.objects.filter(study_session__isnull=False, created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("study_session__study__slug", "study_session__study__name", "day")
        .annotate(written=Count("id"), flagged=Count("id", filter=Q(flagged=True)))
        .order_by("-day", "study_session__study__slug")
    )
    return [
        {
            "study": row["study_session__study__slug"],
            "study_name": row["study_session__study__name"],
            "day": row["day"],
            "written": row["written"],
            "flagged": row["flagged"],
            "share": row["flagged"] / row["written"] if row["written"] else None,
        }
        for row in rows
    ]
