"""The export's statement (database_lines.export_lines_sql) makes the pairs' own line text (the
JSON escaping and the TSV quoting, most of the statement at MultiNLI scale) and their counted labels
(from the table the label table's triggers keep) in a subquery that PostgreSQL may hand to parallel
workers; the label table itself is not read. Read from PostgreSQL's own plan, with parallel plans
made cheap so that a corpus of a few pairs gets one. The export's own connection gives the workers'
sort the memory for MultiNLI's lines (services.EXPORT_SESSION_SETTINGS)."""

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from modeling.snapshots import selectors
from modeling.snapshots.database_lines import COUNTED_TABLE, export_lines_sql
from modeling.snapshots.services import _export_cursor
from tests.modeling.conftest import validated_dev_pairs

CHEAP_PARALLEL_PLANS = (
    "parallel_setup_cost = 0",
    "parallel_tuple_cost = 0",
    "min_parallel_table_scan_size = 0",
    "min_parallel_index_scan_size = 0",
    "max_parallel_workers_per_gather = 2",
)
GENRE_KEY = '"genre": '
LABEL_TABLE = "validation_validationlabel"


def nodes(node: dict[str, Any], in_workers: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
    """Every node of a plan and whether it runs in the parallel workers (below a Gather)."""
    yield node, in_workers
    below = in_workers or node["Node Type"] in ("Gather", "Gather Merge")
    for child in node.get("Plans", []):
        yield from nodes(child, below)


@pytest.mark.django_db
def test_the_pairs_line_text_and_counted_labels_are_made_in_parallel_workers(make_worker: Any) -> None:
    dataset, _ = validated_dev_pairs("parallel-lines", 4, make_worker())
    sql, params = export_lines_sql(
        selectors.pairs_for_export([dataset.slug], {}), scheme=None, unvalidated_gold="author", held_out_dataset_ids=()
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE collection_pair, collection_premise, collection_genre, collection_dataset, "
            f"{COUNTED_TABLE}, modeling_snapshotexclusion"
        )
        for setting in CHEAP_PARALLEL_PLANS:
            cursor.execute(f"SET LOCAL {setting}")  # the test's transaction only
        cursor.execute(f"EXPLAIN (VERBOSE, FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    walked = list(nodes(plan[0]["Plan"]))
    made_in_workers = [
        expression
        for node, in_workers in walked
        if in_workers
        for expression in node.get("Output", [])
        if GENRE_KEY in expression
    ]
    assert made_in_workers, "no parallel worker makes the pairs' line text"
    counted_reads = [in_workers for node, in_workers in walked if node.get("Relation Name") == COUNTED_TABLE]
    assert counted_reads, "the plan reads no counted labels"
    assert all(counted_reads), "the counted labels are read above the parallel workers"
    assert not [node for node, _ in walked if node.get("Relation Name") == LABEL_TABLE], "the label table is read"


@pytest.mark.django_db(transaction=True)
def test_only_the_exports_own_connection_sorts_with_the_memory_for_the_lines() -> None:
    with _export_cursor() as cursor:
        cursor.execute("SELECT current_setting('work_mem'), pg_backend_pid()")
        work_mem, backend = cursor.fetchone()
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('work_mem'), pg_backend_pid()")
        default_work_mem, own_backend = cursor.fetchone()
    assert backend != own_backend
    assert work_mem == "128MB"
    assert default_work_mem != work_mem, "the setting reached the site's own connection"
