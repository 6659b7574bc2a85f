"""A queryset's SQL, to wrap in a statement Django cannot write (a percentile, a FILTER count
over a derived table, a GROUP BY over a subquery's columns).

Django compiles a queryset that can match no row (`pk__in=[]`, the datasets of a researcher in no
team yet) to no SQL at all: `sql_with_params()` raises EmptyResultSet. Every hand-written reader
asks here first, and answers "nothing" for such a scope instead of failing the page.
"""

from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db.models import QuerySet


def sql_of(queryset: QuerySet[Any]) -> tuple[str, tuple[Any, ...]] | None:
    """(SQL, parameters) of `queryset`; None when it can match no row."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return None
    return sql, tuple(params)
