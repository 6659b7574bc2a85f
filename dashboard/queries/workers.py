"""The workers page: each worker's output, agreement with gold and median seconds per writing task."""

from corpus.scope import EVERYTHING, Scope

from ..worker_table import DEFAULT_SORT, SORTABLE, WorkerTable, table_as_of

# The table's columns by sort key: (column heading, is numeric).
WORKER_COLUMNS = SORTABLE


def workers_overview(scope: Scope = EVERYTHING, *, sort: str = DEFAULT_SORT) -> tuple[WorkerTable, str]:
    """The workers table of a scope and split in the asked order (the sort it is: an unknown one is
    the default), read from the maintained rows (`dashboard.worker_table`) as a paginator asks:
    a count and the page's rows, sorted in SQL."""
    scope_id, _ = table_as_of(scope)
    table = WorkerTable(scope_id, sort)
    return table, table.sort
