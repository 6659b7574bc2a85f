"""The export's statement (database_lines.export_lines_sql) makes the pairs' own line text (the
JSON escaping and the TSV quoting, most of the statement at MultiNLI scale) in a subquery that
PostgreSQL may hand to parallel workers, and joins each pair's counted labels (a subquery per pair,
which PostgreSQL 15 runs in one process only) above them. Read from PostgreSQL's own plan, with
parallel plans made cheap so that a corpus of a few pairs gets one. Those labels, with their words,
come from one index alone (`counted_label_words`). The export's own connection gives the workers'
sort the memory for MultiNLI's lines (services.EXPORT_SESSION_SETTINGS)."""

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from modeling.snapshots import selectors
from modeling.snapshots.database_lines import export_lines_sql
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
def test_the_pairs_line_text_is_made_in_parallel_workers_and_their_labels_above_them(make_worker: Any) -> None:
    dataset, _ = validated_dev_pairs("parallel-lines", 4, make_worker())
    sql, params = export_lines_sql(
        selectors.pairs_for_export([dataset.slug], {}), scheme=None, unvalidated_gold="author", held_out_dataset_ids=()
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "ANALYZE collection_pair, collection_premise, collection_genre, collection_dataset, validation_validationlabel, modeling_snapshotexclusion"
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
    label_reads = [in_workers for node, in_workers in walked if node.get("Relation Name") == LABEL_TABLE]
    assert label_reads, "the plan reads no counted labels"
    assert not any(label_reads), "the counted labels are read in a parallel worker"


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


@pytest.mark.django_db
@pytest.mark.parametrize("scheme", [None, "ordinal"])
def test_a_pairs_counted_labels_are_read_from_their_index_alone(make_worker: Any, scheme: str | None) -> None:
    dataset, _ = validated_dev_pairs("index-only", 1, make_worker())
    sql, params = export_lines_sql(
        selectors.pairs_for_export([dataset.slug], {}),
        scheme=scheme,
        unvalidated_gold="author",
        held_out_dataset_ids=(),
    )
    with connection.cursor() as cursor:
        # Whether an index alone can answer the read at all, whatever a corpus this small would
        # choose: the table's scans are off, and the unique (pair, position) index, which the
        # planner may prefer while a fresh table's pages are not all-visible, is dropped (the
        # test's transaction rolls both back).
        for way in ("seqscan", "bitmapscan"):
            cursor.execute(f"SET LOCAL enable_{way} = off")
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred foreign-key checks pending
        cursor.execute(f"ALTER TABLE {LABEL_TABLE} DROP CONSTRAINT one_label_per_position")
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    label_reads = [
        (node["Node Type"], node.get("Index Name"))
        for node, _ in nodes(plan[0]["Plan"])
        if node.get("Relation Name") == LABEL_TABLE
    ]
    assert label_reads == [("Index Only Scan", "counted_label_words")]
