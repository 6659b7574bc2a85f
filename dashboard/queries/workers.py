"""The workers page: each worker's output, agreement with gold and median seconds per writing task."""

import hashlib
from collections.abc import Sequence
from typing import Any

from authorship.selectors import (
    copies_by_writer,
    copy_clusters,
    typing_flagged_share_by_study_day,
    typing_flags_by_worker,
)
from corpus.scope import EVERYTHING, Scope
from quality.correlated_runs import groups_of_runs, latest_run_ids

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
    """How the scope's hypotheses were written (typing flags per study and day, copies): aggregates
    over every written sentence of the scope, so the figure cache's."""
    return cached("worker-authorship", scope, lambda: _authorship_figures(scope))


@refreshable("worker-authorship")
def _authorship_figures(scope: Scope) -> dict[str, Any]:
    return {
        "typing_over_time": typing_flagged_share_by_study_day(scope),
        "copy_writers": copies_by_writer(scope),
        "copy_clusters": copy_clusters(scope),
    }


def typing_of_writers(worker_ids: Sequence[int], scope: Scope = EVERYTHING) -> dict[int, dict[str, int]]:
    """How the page's writers typed their hypotheses (`authorship.selectors.typing_flags_by_worker`):
    the figure cache's, per page of writers."""
    ids = list(worker_ids)
    if not ids:
        return {}
    part = hashlib.sha256(",".join(str(pk) for pk in ids).encode()).hexdigest()[:32]
    return cached("worker-typing", scope, lambda: typing_flags_by_worker(ids, scope), part=part)


def correlated_groups(scope: Scope = EVERYTHING) -> list[dict[str, Any]]:
    """The correlated groups of the latest finished aggregation run of each dataset in scope, as
    plain rows: kept in the figure cache per set of runs, as a finished run's groups never change."""
    run_ids = latest_run_ids(scope)
    if not run_ids:
        return []
    return cached("correlated-groups", scope, lambda: _shown_groups(run_ids), part=",".join(str(pk) for pk in run_ids))


def _shown_groups(run_ids: list[int]) -> list[dict[str, Any]]:
    return [
        {
            "run_id": row["group"].run_id,
            "number": row["group"].number,
            "dataset": row["dataset"].slug,
            "members": [(worker.pk, str(worker)) for worker in row["members"]],
            "shared": row["group"].shared,
            "disagreements": row["group"].disagreements,
            "expected_disagreements": row["group"].expected_disagreements,
            "co_errors": row["group"].co_errors,
            "pairs": row["pairs"],
            "evidence": row["evidence"],
        }
        for row in groups_of_runs(run_ids)
    ]
