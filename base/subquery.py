"""A queryset's SQL, to wrap in a statement Django cannot write (a percentile, a FILTER count
over a derived table, a GROUP BY over a subquery's columns).

Django compiles a queryset that can match no row (`pk__in=[]`, the datasets of a researcher in no
team yet) to no SQL at all: `sql_with_params()` raises EmptyResultSet. Every hand-written reader
asks here first, and answers "nothing" for such a scope instead of failing the page.
"""

from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models import Lookup, QuerySet


def sql_of(queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]] | None:
    """(SQL, parameters) of `queryset`; None when it can match no row."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return None
    return sql, tuple(params)


class EqualsAny(Lookup[Any]):
    """`column = ANY(array)`: with an `ArraySubquery` on the right, the planner looks each id of the
    subquery up by the column's index. `column IN (subquery)` lets it hash the subquery and read
    every row of the table against it instead, which at corpus scale is a scan of every pair for a
    set of a few thousand (the adjudication page's flagged queue). An empty subquery
    (no row can match) is NULL: nothing matches."""

    lookup_name = "equals_any"

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} = ANY({rhs})", (*lhs_params, *rhs_params)
