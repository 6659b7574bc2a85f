"""The maintained workers table: each worker's row of the workers page, per scope and split.

Turning the worker tallies into a thousand rows, sorting and paging them in Python cost most of a
cold workers page: `recompute` writes the rows once, and the page reads the page of rows it shows,
sorted in SQL. Freshness is the figure cache's (`table_with_count`).
"""

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, overload

from django.db import connection, transaction
from django.db.models import Count, F, OrderBy, QuerySet
from django.db.models.functions import Collate
from django.utils import timezone

from collection.models import WritingClaim
from corpus.agreement import ratio
from corpus.models import Premise, Worker
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import excluded_workers
from corpus.worker_tally import worker_sums, writer_sums
from crowd.models import ClaimStatus
from privacy.register import Action, Kind, PersonalField
from quality.selectors import median_per_worker

from .figure_cache import cache_seconds, corpus_is_large, figures_changed_at, refreshable, schedule_refresh
from .models import WorkerTableRow, WorkerTableScope

REFRESH_NAME = "worker-table"
# The columns the page sorts by: (column heading, is numeric); the row's dict keys.
SORTABLE = {
    "worker": ("worker", False),
    "market": ("market", False),
    "pairs_written": ("pairs written", True),
    "author_gold": ("author = gold", True),
    "labels_given": ("labels given", True),
    "gold_agreement": ("agreement with gold", True),
    "median_writing_seconds": ("median s / writing task", True),
}
DEFAULT_SORT = "-pairs_written"
# A row's dict key -> its column.
COLUMN_OF = {"id": "worker_id", "worker": "name"}
ROW_KEYS = (
    "id",
    "worker",
    "username",
    "market",
    "is_trusted",
    "is_excluded",
    "pairs_written",
    "author_gold",
    "labels_given",
    "gold_agreement",
    "median_writing_seconds",
)


# The rows hold the person's name and figures; their sources are in the access download.
PERSONAL_ROWS = PersonalField(
    "dashboard.WorkerTableRow",
    "*",
    Kind.ESTIMATE,
    Action.DELETE_ROW,
    Action.DELETE_ROW,
    "worker",
    why="The workers page's kept row of the person's name and figures; the page recomputes without them.",
    derived=True,
)


def recompute(scope: Scope) -> datetime:
    """Compute the scope's rows (`worker_rows`) and replace the stored ones; when they were computed."""
    rows = worker_rows(scope)
    key = scope.key
    with transaction.atomic():
        with connection.cursor() as cursor:
            # One writer of a scope at a time (a task and a page may both refresh it); an upsert,
            # so a first computation writes as many statements as a later one.
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"worker-table:{key}"])
            now = timezone.now()
            cursor.execute(
                f"INSERT INTO {WorkerTableScope._meta.db_table} (key, computed_at) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET computed_at = EXCLUDED.computed_at RETURNING id",
                [key, now],
            )
            scope_id = cursor.fetchone()[0]
        WorkerTableRow.objects.filter(scope_id=scope_id).delete()
        WorkerTableRow.objects.bulk_create(
            [
                WorkerTableRow(
                    scope_id=scope_id,
                    worker_id=row["id"],
                    name=row["worker"],
                    name_key=row["worker"].lower(),
                    **{column: row[column] for column in ROW_KEYS if column not in COLUMN_OF},
                )
                for row in rows
            ],
            batch_size=1000,
        )
    return now


@refreshable(REFRESH_NAME)
def _refresh(scope: Scope) -> datetime:
    return recompute(scope)


def table_with_count(scope: Scope) -> tuple[int, datetime, int | None]:
    """(the stored scope's id, when its rows were computed, how many rows it has: None when computed
    now), after making sure they are there: computed now when never computed; out of date (the
    figure cache's rules) recomputed now on a small corpus and by a task on a large one."""
    key = scope.key
    found = (
        WorkerTableScope.objects.filter(key=key)
        .annotate(count=Count("rows"))
        .values_list("pk", "computed_at", "count")
        .first()
    )
    if found is not None:
        at = found[1].timestamp()
        if at >= figures_changed_at() and timezone.now().timestamp() - at < cache_seconds():
            return found
    large = corpus_is_large()  # asked on a first load too, so it reads the statements a later one does
    if found is not None and large:
        schedule_refresh(REFRESH_NAME, scope)
        return found  # the kept rows, shown meanwhile
    recompute(scope)
    scope_id, computed_at = WorkerTableScope.objects.values_list("pk", "computed_at").get(key=key)
    return scope_id, computed_at, None


def order_of(sort: str) -> tuple[list[OrderBy], str]:
    """The SQL order of a `sort` ("-pairs_written", "worker"...; an unknown one is the default) and
    the sort it is. As the page has always sorted: by the column, then by the name, both reversed
    when descending; names compared case-folded; empty cells last whichever way."""
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in SORTABLE:
        key, descending = DEFAULT_SORT.lstrip("-"), True
    first: F | Collate = Collate(F("name_key"), "C") if key == "worker" else F(key)
    columns: list[F | Collate] = [first, Collate(F("name"), "C"), F("worker_id")]
    order = [column.desc(nulls_last=True) if descending else column.asc(nulls_last=True) for column in columns]
    return order, ("-" if descending else "") + key


class WorkerTable(Sequence[dict[str, Any]]):
    """The scope's rows in the asked order as the page's dicts, read as a paginator asks: its
    length is the count given (or one count), a slice one LIMIT/OFFSET read."""

    def __init__(self, scope_id: int, sort: str, count: int | None = None) -> None:
        order, self.sort = order_of(sort)
        self.rows: QuerySet[WorkerTableRow] = WorkerTableRow.objects.filter(scope_id=scope_id).order_by(*order)
        self._count = count  # known when read with the scope's row (`table_with_count`)

    def __len__(self) -> int:
        if self._count is None:
            self._count = self.rows.count()
        return self._count

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return self._as_dicts(self.rows[index])
        found = self._as_dicts(self.rows[index : index + 1]) if index >= 0 else []
        if not found:
            raise IndexError(index)
        return found[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._as_dicts(self.rows))

    @staticmethod
    def _as_dicts(rows: QuerySet[WorkerTableRow]) -> list[dict[str, Any]]:
        columns = [COLUMN_OF.get(key, key) for key in ROW_KEYS]
        return [dict(zip(ROW_KEYS, values, strict=True)) for values in rows.values_list(*columns)]


def worker_rows(scope: Scope) -> list[dict[str, Any]]:
    """Each worker's row, summed from the maintained worker tallies (`corpus.worker_tally`)."""
    written = writer_sums(scope)
    given = worker_sums(scope, medians=False, only=("n", "with_gold", "gold_agreements"))
    medians = median_writing_seconds(scope)
    active = set(written) | set(given) | set(medians)
    excluded = excluded_workers(scope)  # in the scope's teams: another team's decision is its own
    rows: list[dict[str, Any]] = []
    # Plain rows, not Worker objects: a thousand of them with their users cost more than the figures.
    people = Worker.objects.filter(pk__in=active).values_list(
        "pk", "external_id", "user__username", "market", "is_trusted"
    )
    for pk, external_id, username, market, is_trusted in people:
        wrote = written.get(pk, {})
        gave = given.get(pk, {})
        rows.append(
            {
                "id": pk,
                "worker": Worker.named(external_id, username),
                "username": username,
                "market": market,
                "is_trusted": is_trusted,
                "is_excluded": pk in excluded,
                "pairs_written": wrote.get("n", 0),
                "author_gold": ratio(wrote.get("author_is_gold", 0), wrote.get("with_gold", 0)),
                "labels_given": gave.get("n", 0),
                "gold_agreement": ratio(gave.get("gold_agreements", 0), gave.get("with_gold", 0)),
                "median_writing_seconds": medians.get(pk),
            }
        )
    return rows


def median_writing_seconds(scope: Scope = EVERYTHING) -> dict[int, float]:
    """{worker id: median seconds from claiming a premise to submitting it}, computed in SQL."""
    claims = WritingClaim._meta.db_table
    premises = Premise._meta.db_table
    where = ["c.status = %s", "c.submitted_at IS NOT NULL"]
    params: list[Any] = [ClaimStatus.SUBMITTED.value]
    if (condition := scope.sql("p.dataset_id")) is not None:
        where.append(condition[0])
        params.extend(condition[1])
    if scope.split:
        where.append("p.split = %s")
        params.append(scope.split)
    seconds = "EXTRACT(EPOCH FROM (c.submitted_at - c.created_at))"
    return median_per_worker(
        f"SELECT c.worker_id AS worker_id, {seconds} AS seconds FROM {claims} c "
        f"JOIN {premises} p ON p.id = c.premise_id WHERE {' AND '.join(where)}",
        params,
    )
