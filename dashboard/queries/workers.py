"""The workers page: each worker's output, agreement with gold and median seconds per writing task."""

from corpus.scope import EVERYTHING, Scope

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
