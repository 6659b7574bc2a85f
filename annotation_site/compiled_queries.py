"""Querysets built and compiled once per shape, then bound to each call's values.

On a hot request path the ORM's building and compiling of a queryset can cost more than the
statement itself: a validation claim spent ~3 ms of Python on its candidate query (filters,
excludes, a correlated subquery) against ~1 ms of PostgreSQL, and a web process's threads share
one interpreter (issue 28: claims per second). The queryset stays the one statement of its rule,
written once with the ORM; this keeps its compiled SQL.

`CompiledQuery(build)`: `build(shape, values)` returns the queryset for a shape (whatever changes
the SQL's text: a dataset or none, a worker trusted or not) with stand-ins for the values that
only change its parameters (a worker's pk, the time). Its first `bind` for a shape builds it with
stand-ins no real value takes, compiles it, and remembers where each stand-in sits among the
parameters; every later `bind` of that shape copies the parameters and puts the values in. A value
the compiled statement does not carry as a parameter (a stand-in missing from them) is refused
when compiled, so a builder that folded a value into the SQL's text fails at once instead of
binding the first caller's value for every later one.
"""

import threading
from collections.abc import Callable, Hashable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import QuerySet

# Stand-ins: values no row or clock has, one per slot (ints below any key, instants long past).
_STAND_IN_INT = -987_650_000
_STAND_IN_TIME = datetime(1901, 2, 3, 4, 5, 6, tzinfo=UTC)


def _as_param(value: Any) -> Any:
    """A value as the compiled parameters carry it (a datetime adapted as its field adapts it)."""
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    return value


def _stand_in(value: Any, number: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | datetime):
        raise ImproperlyConfigured(f"a compiled query binds ints and datetimes only, not {value!r}")
    if isinstance(value, datetime):
        return _STAND_IN_TIME + timedelta(seconds=number)
    return _STAND_IN_INT - number


Compiled = tuple[str, tuple[Any, ...], tuple[tuple[int, str], ...]]


class CompiledQuery:
    """A queryset's SQL compiled once per shape (and database), bound to each call's values."""

    def __init__(self, build: Callable[[Hashable, Mapping[str, Any]], QuerySet[Any]]) -> None:
        self._build = build
        self._compiled: dict[tuple[str, Hashable, tuple[str, ...]], Compiled] = {}
        self._lock = threading.Lock()

    def bind(self, shape: Hashable, **values: Any) -> tuple[str, list[Any]]:
        """(sql, params) of the shape's statement with these values."""
        key = (connection.alias, shape, tuple(sorted(values)))
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(key) or self._compile(shape, values)
                self._compiled[key] = compiled
        sql, params, slots = compiled
        bound = list(params)
        for index, name in slots:
            bound[index] = _as_param(values[name])
        return sql, bound

    def fetch(self, shape: Hashable, **values: Any) -> list[tuple[Any, ...]]:
        """The rows of the shape's statement with these values."""
        sql, params = self.bind(shape, **values)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return list(cursor.fetchall())

    def _compile(self, shape: Hashable, values: Mapping[str, Any]) -> Compiled:
        stand_ins = {name: _stand_in(value, number) for number, (name, value) in enumerate(sorted(values.items()))}
        queryset = self._build(shape, stand_ins)
        sql, params = queryset.query.get_compiler(connection=connection).as_sql()
        as_params = {name: _as_param(stand_in) for name, stand_in in stand_ins.items()}
        slots = tuple(
            (index, name)
            for index, param in enumerate(params)
            for name, stand_in in as_params.items()
            if type(param) is type(stand_in) and param == stand_in
        )
        missing = sorted(set(stand_ins) - {name for _, name in slots})
        if missing:
            raise ImproperlyConfigured(f"the compiled statement does not take {', '.join(missing)} as parameters")
        return str(sql), tuple(params), slots
