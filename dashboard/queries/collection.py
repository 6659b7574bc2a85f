"""The collection page: premises and pairs per genre and split, claims in flight, pairs per hour, imports."""

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Exists, OuterRef, QuerySet
from django.db.models.functions import TruncHour
from django.utils import timezone

from collection.models import WritingClaim
from corpus import tallies
from corpus.models import LengthKind, PremiseStatus
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import pairs_in, premises_in
from crowd.claiming import live_claims
from validation.models import ValidationClaim

from ..figure_cache import cached, refreshable
from .imports import recent_corpus_imports, recent_premise_imports

HOURS_SHOWN = 48


def collection_overview(scope: Scope = EVERYTHING) -> dict[str, Any]:
    overview = cached("collection", scope, lambda: _collection_overview(scope))
    # Counted live, never from the cache: the reports page counts it live too, and the two must agree.
    return {**overview, "held_premises": held_premise_count(scope)}


@refreshable("collection")
def _collection_overview(scope: Scope) -> dict[str, Any]:
    now = timezone.now()
    rows = genre_split_rows(scope)
    totals = {"premises": sum(row["premises"] for row in rows), "pairs": sum(row["pairs"] for row in rows)}

    # Counted in the claim tables' indexes of open claims, each live claim's premise or pair looked
    # up by its key where the scope is narrower: a join of the claims with their dataset's premises
    # read every premise.
    narrow = not scope.is_everything or bool(scope.split)
    writing_open = _live_count(WritingClaim.objects.all(), now, "premise_id", premises_in(scope) if narrow else None)
    validation_open = _live_count(ValidationClaim.objects.all(), now, "pair_id", pairs_in(scope) if narrow else None)

    return {
        "rows": rows,
        "totals": totals,
        "writing_claims_open": writing_open,
        "validation_claims_open": validation_open,
        "hourly": pairs_per_hour(scope, now=now),
    }


def _live_count(claims: QuerySet[Any], now: datetime, item: str, in_scope: QuerySet[Any] | None) -> int:
    """The live claims of `claims` (one per claim, an item claimed twice counted twice), only those
    whose item (`item`: the claim's premise or pair column) is in `in_scope` where one is given."""
    live = claims.filter(live_claims(now))
    if in_scope is not None:
        live = live.filter(Exists(in_scope.filter(pk=OuterRef(item))))
    return live.count()


def held_premise_count(scope: Scope = EVERYTHING) -> int:
    """Premises held for a researcher: the one count the collection and reports pages both show."""
    return premises_in(scope).filter(status=PremiseStatus.HELD).count()


GENRE_SPLIT = ("genre__slug", "genre__name", "genre__is_training", "split")


def genre_split_rows(scope: Scope = EVERYTHING) -> list[dict[str, Any]]:
    """Premises and pairs per genre and split, summed from the maintained tallies (corpus.tallies)."""
    rows: dict[tuple[Any, ...], dict[str, int]] = {}
    for *key, n in tallies.length_counts(LengthKind.PREMISE, scope, by=GENRE_SPLIT):
        rows.setdefault(tuple(key), {"premises": 0, "pairs": 0})["premises"] += n
    for *key, n in tallies.pair_counts(scope, by=GENRE_SPLIT):
        rows.setdefault(tuple(key), {"premises": 0, "pairs": 0})["pairs"] += n
    return [
        {**dict(zip(GENRE_SPLIT, key, strict=False)), **counts}
        for key, counts in sorted(rows.items(), key=lambda item: (item[0][0], item[0][3]))
    ]


# The malformed lines each import row lists: the imports page keeps the rest.
MALFORMED_LINES_SHOWN = 5


def recent_imports(limit: int = 10, scope: Scope = EVERYTHING) -> list[dict[str, Any]]:
    """The latest imports, newest first, with their progress (read fresh) and first malformed lines."""
    rows: list[dict[str, Any]] = [
        {
            "kind": "premises",
            "source": run.source,
            "target": f"{run.dataset.slug} / {run.genre.slug}",
            "status": run.status,
            "progress": run.progress,
            "started_at": run.started_at,
            "error": run.error,
            "summary": f"{run.kept:,} kept of {run.sentences_read:,} sentences, {run.dropped:,} dropped, "
            f"{len(run.malformed):,} malformed lines",
            "malformed": run.malformed[:MALFORMED_LINES_SHOWN],
            "malformed_count": len(run.malformed),
        }
        for run in recent_premise_imports(limit, scope)
    ] + [
        {
            "kind": "pairs",
            "source": run.source,
            "target": f"{run.dataset.slug} / {run.split or 'split from file'}",
            "status": run.status,
            "progress": run.progress,
            "started_at": run.started_at,
            "error": run.error,
            "summary": f"{run.pairs_created:,} pairs and {run.labels_created:,} labels added, "
            f"{run.already_present:,} already present, {run.malformed_count:,} malformed lines",
            "malformed": [f"line {line}: {why}" for line, why in run.problems[:MALFORMED_LINES_SHOWN]],
            "malformed_count": run.malformed_count,
        }
        for run in recent_corpus_imports(limit, scope)
    ]
    return sorted(rows, key=lambda row: row["started_at"], reverse=True)[:limit]


def pairs_per_hour(
    scope: Scope = EVERYTHING, *, now: datetime | None = None, hours: int = HOURS_SHOWN
) -> list[tuple[datetime, int]]:
    """Pairs written by a worker per hour over the last `hours` hours, oldest first, empty hours
    included. Imported pairs are the imports table's figure (the partial index pair_written_at
    holds written pairs only)."""
    now = now or timezone.now()
    last_hour = now.replace(minute=0, second=0, microsecond=0)
    first_hour = last_hour - timedelta(hours=hours - 1)
    counts = {
        row["hour"]: row["n"]
        for row in pairs_in(scope)
        .filter(created_at__gte=first_hour, author__isnull=False)
        .annotate(hour=TruncHour("created_at"))
        .values("hour")
        .annotate(n=Count("id"))
        .order_by()
    }
    return [(first_hour + timedelta(hours=i), counts.get(first_hour + timedelta(hours=i), 0)) for i in range(hours)]
