"""A statement's plan as PostgreSQL ran it, for the tests that check which index a statement reads
and how many rows it passes over."""

import json
from collections.abc import Iterator, Sequence
from typing import Any


def analysed_plan(cursor: Any, sql: str, params: Sequence[Any] = ()) -> dict[str, Any]:
    """The root node of `EXPLAIN (ANALYZE, FORMAT JSON)` of the statement, run on `cursor`."""
    # Without parameters the text is sent as it is: a `%` in it is no placeholder.
    cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", list(params) if params else None)
    explained = cursor.fetchone()[0]
    plan: dict[str, Any] = (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]
    return plan


def nodes_reading(plan: dict[str, Any], table: str, alias: str | None = None) -> Iterator[dict[str, Any]]:
    """Every node of the plan that reads `table` (under `alias`, if one is given)."""
    if plan.get("Relation Name") == table and (alias is None or plan.get("Alias") == alias):
        yield plan
    for child in plan.get("Plans", []):
        yield from nodes_reading(child, table, alias)
