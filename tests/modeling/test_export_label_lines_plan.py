"""The label-level file's statement (label_rows.label_lines_sql) makes each pair's part of the line
(pairID, split) once per pair, in the pairs' own subquery, and the line of each label only refers
to it: pulled up into the line, it would be made again for every label of the pair, a share of the
whole file's time. The pairs' subquery may go to PostgreSQL's parallel workers, which then make the
pair parts while the labels are read. Read from PostgreSQL's own plan (EXPLAIN VERBOSE)."""

import json
from typing import Any

import pytest
from django.db import connection

from modeling.snapshots.label_rows import _fill_worker_facts, label_lines_sql
from tests.modeling.conftest import validated_dev_pairs
from tests.modeling.test_export_lines_parallel_plan import CHEAP_PARALLEL_PLANS, nodes

pytestmark = pytest.mark.django_db
PAIR_KEY = '{"pairID": '
LABEL_TABLE = "validation_validationlabel"


def reads_labels(node: dict[str, Any]) -> bool:
    return any(inner.get("Relation Name") == LABEL_TABLE for inner, _ in nodes(node))


def pair_part_makers(worker: Any, settings: tuple[str, ...] = ()) -> list[tuple[dict[str, Any], bool]]:
    """The nodes of the label statement's plan that output the pair part, and whether each runs in
    the parallel workers. A node above the labels' join outputs it too, as a reference to what a
    node below made: only nodes that read no label are returned, those that make it once per pair.
    """
    dataset, _ = validated_dev_pairs("plan-me", 3, worker)
    with connection.cursor() as wrapper:
        _fill_worker_facts(wrapper.cursor, [dataset.slug], {"label_rows": True}, None)
        sql, params = label_lines_sql([dataset.slug], {"label_rows": True}, None)
        wrapper.execute("ANALYZE collection_pair, collection_premise, collection_genre, modeling_snapshotexclusion")
        for setting in settings:
            wrapper.execute(f"SET LOCAL {setting}")  # the test's transaction only
        wrapper.execute(f"EXPLAIN (VERBOSE, FORMAT JSON) {sql}", params)
        (plan,) = wrapper.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    return [
        (node, in_workers)
        for node, in_workers in nodes(plan[0]["Plan"])
        if any(PAIR_KEY in expression for expression in node.get("Output", [])) and not reads_labels(node)
    ]


def test_the_pair_part_of_a_label_line_is_made_once_per_pair_below_the_join(make_worker: Any) -> None:
    assert pair_part_makers(make_worker()), (
        "no node below the labels' join makes the pair part: every label's line makes it"
    )


# A few pairs may still be read serially by their indexes, nested in the joins, whatever parallel
# plans cost (it happened after other tests had grown the tables): those paths are set aside, so
# that the plan is a parallel one and the question is only where the pair parts are made.
SERIAL_PATHS_OFF = tuple(
    f"{setting} = off"
    for setting in ("enable_nestloop", "enable_indexscan", "enable_indexonlyscan", "enable_bitmapscan")
)


def test_the_pair_parts_are_made_by_parallel_workers_when_the_plan_is_parallel(make_worker: Any) -> None:
    makers = pair_part_makers(make_worker(), CHEAP_PARALLEL_PLANS + SERIAL_PATHS_OFF)
    assert makers, "no node below the labels' join makes the pair part"
    assert any(in_workers for _, in_workers in makers), (
        f"the pair parts are made above the parallel workers, by {[node['Node Type'] for node, _ in makers]}"
    )
