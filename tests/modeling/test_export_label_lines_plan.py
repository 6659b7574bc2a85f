"""The label-level file's statement (label_rows.label_lines_sql) makes each pair's part of the line
(pairID, split) once per pair, in the pairs' own subquery, and the line of each label only refers
to it: pulled up into the line, it would be made again for every label of the pair, a share of the
whole file's time. Read from PostgreSQL's own plan (EXPLAIN VERBOSE)."""

import json

import pytest
from django.db import connection

from modeling.snapshots.label_rows import _fill_worker_facts, label_lines_sql
from tests.modeling.conftest import validated_dev_pairs

pytestmark = pytest.mark.django_db
PAIR_KEY = '{"pairID": '


def outputs(node):
    """Every (node type, output expression) of a plan, the top node's first."""
    yield from ((node["Node Type"], expression) for expression in node.get("Output", []))
    for child in node.get("Plans", []):
        yield from outputs(child)


def test_the_pair_part_of_a_label_line_is_made_once_per_pair_below_the_join(make_worker):
    dataset, _ = validated_dev_pairs("plan-me", 3, make_worker())
    with connection.cursor() as wrapper:
        _fill_worker_facts(wrapper.cursor, [dataset.slug], {"label_rows": True}, None)
        sql, params = label_lines_sql([dataset.slug], {"label_rows": True}, None)
        wrapper.execute(f"EXPLAIN (VERBOSE, FORMAT JSON) {sql}", params)
        (plan,) = wrapper.fetchone()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    made = [(node, expression) for node, expression in outputs(plan[0]["Plan"]) if PAIR_KEY in expression]
    assert made, "the plan makes no pair part"
    top = plan[0]["Plan"]
    assert not any(PAIR_KEY in expression for expression in top.get("Output", [])), (
        "the line of every label makes the pair's part again"
    )
    assert all(node == "Subquery Scan" for node, _ in made), made
