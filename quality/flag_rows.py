"""The maintained worker-flag table: `worker_quality`'s rows of a scope, kept for the pages.

`worker_quality` flags in Python over every worker (the guesser flag's Benjamini–Hochberg
correction runs over every validator tested, so a page of rows cannot be flagged from its own
rows). `recompute` runs it once and writes the rows in one transaction; the pages read them and
say how old they are. Written by the task `quality.refresh_worker_flags` (queued, coalesced, after
label writes: `labels_moved`) and by the dashboard's figure refresh.
"""

import json
import math
from collections.abc import Iterable
from dataclasses import fields
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from base.task_queue import enqueue_coalesced
from corpus.models import Pair, ValidationLabel
from corpus.scope import EVERYTHING, Scope

from . import flags as flag_rules
from .models import WorkerFlagRow, WorkerFlagScope
from .selectors import WORKER_COLUMNS, WorkerQuality, flag_kind_words, worker_quality

REFRESH_TASK = "quality.refresh_worker_flags"
EAGER_REFRESH_KEY = "quality:worker-flags:refreshed-eagerly"
# The figures of a WorkerQuality row kept in `WorkerFlagRow.figures` (all but the worker and flags).
FIGURE_FIELDS = tuple(each.name for each in fields(WorkerQuality) if each.name not in ("worker", "flags"))


def recompute(scope: Scope) -> datetime:
    """Compute `worker_quality(scope)` and replace the scope's rows with it; when it was computed."""
    rows = worker_quality(scope)
    key = scope.datasets_key
    with transaction.atomic():
        # One writer of a scope at a time (a task and a page may both refresh it).
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"worker-flags:{key}"])
        now = timezone.now()
        flagged = [row.worker.pk for row in rows if row.flags]
        # One statement whether the scope is new or not (an upsert), so a page's first load reads
        # as many statements as its later ones; the flagged workers' pairs are counted when asked.
        table = WorkerFlagScope._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (key, computed_at, flagged, flagged_pairs) VALUES (%s, %s, %s, NULL) "
                "ON CONFLICT (key) DO UPDATE SET computed_at = EXCLUDED.computed_at, flagged = EXCLUDED.flagged, "
                "flagged_pairs = NULL RETURNING id",
                [key, now, json.dumps(flagged)],
            )
            scope_id = cursor.fetchone()[0]
        WorkerFlagRow.objects.filter(scope_id=scope_id).delete()
        WorkerFlagRow.objects.bulk_create(
            [
                WorkerFlagRow(
                    scope_id=scope_id,
                    worker_id=row.worker.pk,
                    position=position,
                    figures=stored({name: getattr(row, name) for name in FIGURE_FIELDS}),
                    flags=[
                        {"kind": flag.kind, "reason": flag.reason, "figures": stored(dict(flag.figures))}
                        for flag in row.flags
                    ],
                )
                for position, row in enumerate(rows)
            ],
            batch_size=1000,
        )
    return now


def pairs_labelled_by(worker_ids: list[int]) -> int:
    """How many pairs these workers labelled (the flagged queue's pairs before decisions): one
    statement, none flagged or many, looked up by the labels' worker index."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(DISTINCT pair_id) FROM {ValidationLabel._meta.db_table} WHERE worker_id = ANY(%s)",
            [list(worker_ids)],
        )
        return int(cursor.fetchone()[0])


def count_flagged_pairs(scope: Scope, flagged: list[int], computed_at: datetime) -> int:
    """`pairs_labelled_by` the scope's flagged workers, kept on its row unless the rows were
    recomputed meanwhile (the next page counts again)."""
    pairs = pairs_labelled_by(flagged)
    WorkerFlagScope.objects.filter(key=scope.datasets_key, computed_at=computed_at).update(flagged_pairs=pairs)
    return pairs


def refresh_every_scope() -> list[str]:
    """Recompute every scope the table holds (the task after label writes); the keys refreshed.
    A scope whose dataset is gone loses its rows."""
    refreshed = []
    for key in WorkerFlagScope.objects.order_by("key").values_list("key", flat=True):
        scope = Scope.of_key(key)
        if scope is None:  # its dataset is gone
            WorkerFlagScope.objects.filter(key=key).delete()
            continue
        recompute(scope)
        refreshed.append(key)
    return refreshed


def computed_at(scope: Scope) -> datetime | None:
    """When the scope's rows were computed; None when they never were."""
    return WorkerFlagScope.objects.filter(key=scope.datasets_key).values_list("computed_at", flat=True).first()


def rows_of(scope: Scope) -> QuerySet[WorkerFlagRow]:
    """The scope's rows in `worker_quality`'s order, with the worker's shown columns: slice it for a
    page (LIMIT/OFFSET on the (scope, position) key) and turn the slice to rows with `as_quality`."""
    return (
        WorkerFlagRow.objects.filter(scope__key=scope.datasets_key)
        .select_related("worker__user")
        .only("position", "figures", "flags", *(f"worker__{column}" for column in WORKER_COLUMNS))
        .order_by("position")
    )


def as_quality(rows: Iterable[WorkerFlagRow]) -> list[WorkerQuality]:
    """The stored rows as the WorkerQuality rows `worker_quality` returned when they were computed."""
    return [
        WorkerQuality(
            worker=row.worker,
            **{name: read(row.figures[name]) for name in FIGURE_FIELDS if name in row.figures},
            flags=[
                flag_rules.WorkerFlag(
                    worker=row.worker_id, kind=flag["kind"], reason=flag["reason"], figures=read(flag["figures"])
                )
                for flag in row.flags
            ],
        )
        for row in rows
    ]


def flagged_ids(scope: Scope) -> list[int] | None:
    """The workers the checks flag in the scope, sorted; None when the scope was never computed."""
    found = flagged_with_pairs(scope)
    return None if found is None else found[0]


def flagged_with_pairs(scope: Scope) -> tuple[list[int], int | None] | None:
    """`flagged_ids` and the kept count of their pairs (None: not counted yet) in one read; None
    when the scope was never computed."""
    found = WorkerFlagScope.objects.filter(key=scope.datasets_key).values_list("flagged", "flagged_pairs").first()
    return None if found is None else (sorted(found[0]), found[1])


def flag_marks_of(worker_ids: Iterable[int], scope: Scope = EVERYTHING) -> dict[int, list[str]]:
    """{worker pk: ["flagged: <flag>", ...]} of those of these workers the stored rows flag
    (`quality.selectors.flag_words`), read for these workers only."""
    ids = sorted(set(worker_ids))
    if not ids:
        return {}
    rows = WorkerFlagRow.objects.filter(scope__key=scope.datasets_key, worker_id__in=ids).exclude(flags=[])
    # The stored flags' kinds only: a list of hundreds of sessions reads no figures and no worker.
    return {
        worker_id: flag_kind_words(flag["kind"] for flag in flags)
        for worker_id, flags in rows.values_list("worker_id", "flags")
    }


def approval_marks(worker_ids: Iterable[int]) -> dict[int, list[str]]:
    """`flag_marks_of` every dataset's rows for the approval list (the completed sessions' CSV and
    list: `crowd.registry.worker_flags`), these workers' rows only. Rows never computed, or older
    than the dashboard's figure interval on a corpus under its large size, are computed first; on
    a large one the rows are read as they are (a label write queues their refresh: `labels_moved`)."""
    ids = sorted(set(worker_ids))
    if not ids:
        return {}
    at = computed_at(EVERYTHING)
    interval = float(getattr(settings, "DASHBOARD_CACHE_SECONDS", 5))
    if at is None or ((timezone.now() - at).total_seconds() >= interval and not _corpus_is_large()):
        recompute(EVERYTHING)
    return flag_marks_of(ids)


def _corpus_is_large() -> bool:
    # As the dashboard judges it (figure_cache.corpus_is_large): the highest pair id, an index lookup.
    highest = Pair.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return bool(highest >= getattr(settings, "DASHBOARD_LARGE_PAIRS", 200_000))


def labels_moved(sender: Any = None, **kwargs: Any) -> None:
    """Receiver of the corpus's label events (`corpus.signals.pairs_moved`, `gold_recounted`): once
    the writer has committed, queue one refresh of the table (coalesced: a burst of submits costs
    one run a window). The run refreshes the scopes the table holds (none before a page asked)."""
    seconds = getattr(settings, "WORKER_FLAGS_COALESCE_SECONDS", 30.0)
    transaction.on_commit(lambda: _queue_refresh(seconds))


def _queue_refresh(seconds: float) -> None:
    # Without a broker the task runs at once (in the caller or the embedded thread): at most one
    # run a window, so a burst of writes (an import, a crowd's submits) does not recompute per commit.
    if settings.CELERY_TASK_ALWAYS_EAGER and not cache.add(EAGER_REFRESH_KEY, 1, seconds):
        return
    enqueue_coalesced(REFRESH_TASK, seconds=seconds)


# PostgreSQL's JSON has no NaN or infinities (a median of no timed items is -inf): stored as
# {NON_FINITE: "-inf"} and read back as the float.
NON_FINITE = "__float__"


def stored(value: Any) -> Any:
    """`value` with every non-finite float replaced by its JSON-safe stand-in, at any depth."""
    if isinstance(value, float) and not math.isfinite(value):
        return {NON_FINITE: repr(value)}
    if isinstance(value, dict):
        return {key: stored(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [stored(item) for item in value]
    return value


def read(value: Any) -> Any:
    """What `stored` kept, as it was (tuples come back as lists)."""
    if isinstance(value, dict):
        if set(value) == {NON_FINITE}:
            return float(value[NON_FINITE])
        return {key: read(item) for key, item in value.items()}
    if isinstance(value, list):
        return [read(item) for item in value]
    return value
