"""The workers page: each worker's output, agreement with gold and median seconds per writing task."""

from typing import Any

from authorship.selectors import copies_by_writer, copy_clusters, typing_flagged_share_by_study_day
from corpus.scope import EVERYTHING, Scope

from ..figure_cache import cached, refreshable
from ..worker_table import DEFAULT_SORT, SORTABLE, WorkerTable, table_with_count

# The table's columns by sort key: (column heading, is numeric).
WORKER_COLUMNS = SORTABLE


def workers_overview(scope: Scope = EVERYTHING, *, sort: str = DEFAULT_SORT) -> tuple[WorkerTable, str]:
    """The workers table of a scope and split in the asked order (the sort it is: an unknown one is
    the default), read from the maintained rows (`dashboard.worker_table`) as a paginator asks:
    the page's rows sorted in SQL, their count read with the table's scope row."""
    scope_id, _, count = table_with_count(scope)
    table = WorkerTable(scope_id, sort, count)
    return table, table.sort


def authorship_figures(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """How the scope's hypotheses were written, over every writer (authorship app): the typing
    flags' share per study and day, the writers with most copies and the largest groups of copies.
    Aggregates over every written sentence of the scope, so a figure of the figure cache: computed
    at most once per few seconds, and on a large corpus shown as last computed while a task
    recomputes it (`dashboard.figure_cache`)."""
    return cached("worker-authorship", scope, lambda: _authorship_figures(scope))


@refreshable("worker-authorship")
def _authorship_figures(scope: Scope) -> dict[str, Any]:
    return {
        "typing_over_time": typing_flagged_share_by_study_day(scope),
        "copy_writers": copies_by_writer(scope),
        "copy_clusters": copy_clusters(scope),
    }
