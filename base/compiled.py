"""Statements the ORM builds the same way on every call, compiled once per process.

Building and compiling a query with several filtered aggregates and subqueries costs a page a few
milliseconds of Python; the database's own work is the same either way. A statement that takes no
argument (its parameters are constants) has the same text every time, so it is compiled at its
first use and run as SQL after (`Model.objects.raw` or a cursor). Its rule stays where it was, in
the function that builds the queryset.
"""

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet

_compiled: dict[str, tuple[str, tuple[Any, ...]]] = {}


def compiled_once(name: str, build: Callable[[], QuerySet[Any]]) -> tuple[str, tuple[Any, ...]]:
    """The SQL and parameters of `build()`'s queryset, compiled at the first call under `name` in
    this process. `build` must take no argument and read nothing that changes: what it reads the
    first time is what every later call runs."""
    found = _compiled.get(name)
    if found is None:
        sql, params = build().query.sql_with_params()
        found = _compiled[name] = (sql, tuple(params))
    return found


def forget_compiled() -> None:
    """Compile each statement again at its next use. The suite does before every test, so that a
    test of a builder (a mutant of it, under mutation testing) runs the builder, not the text an
    earlier test compiled."""
    _compiled.clear()
