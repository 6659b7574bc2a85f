"""Querysets built and compiled once per shape, then bound to each call's values.

On a hot request path the ORM's building and compiling of a queryset can cost more than the
statement itself: a validation claim spent ~3 ms of Python on its candidate query (filters,
excludes, a correlated subquery) against ~1 ms of PostgreSQL, and a web process's threads share
one interpreter (issue 28: claims per second). The queryset stays the one statement of its rule,
written once with the ORM; this keeps its compiled SQL.

`CompiledQuery(build)`: `build(shape, values)` returns the queryset for a shape (whatever changes
the SQL's text: a dataset or none, a worker trusted or not) with stand-ins for the values that
only change its parameters (a worker's pk, the time, a batch's uuid). Its first `bind` for a shape
builds it with stand-ins no real value takes, compiles it, and remembers where each stand-in sits
among the parameters; every later `bind` of that shape copies the parameters and puts the values
in. A value the compiled statement does not carry as a parameter (a stand-in missing from them) is
refused when compiled, so a builder that folded a value into the SQL's text fails at once instead
of binding the first caller's value for every later one.

`fetch` returns the statement's rows; `objects` the model instances iterating the queryset would
give, its `select_related` objects attached (a worker's claims with their pairs, on every submit:
building and compiling that six-table read cost ~1.5 ms of Python against ~0.9 ms in PostgreSQL).

On PostgreSQL a shape's statement can also run as a server-side prepared statement, PREPAREd once
per connection (`prepare=True`): PostgreSQL plans it afresh for its first five runs, then keeps a
generic plan when that is as good. Planning was most of these reads' server time (the six-table
read of a batch's claims: 0.73 ms planning against 0.13 ms running; from Python 1.69 -> 0.44 ms a
read at 433k pairs, issue 28). Only where the builder asks, once its generic plan has been read
(bench/submit_profile.py --plans): a prepared statement's parameters are typed and planned as
parameters, so a partial index whose predicate names a constant the statement binds (the claim
queue's `label_count < 5 - held_places`) no longer matches, even in a custom plan, and a generic
plan cannot see a skewed value. Prepared, the claim's candidate walk took 57 ms (custom plans) and
then 330 ms (generic). Prepared statements live in the database session: a pooler that hands one
client's transactions to several sessions (PgBouncer's transaction mode) needs
`DATABASE_PREPARED_STATEMENTS=0`. A migration that changes a selected column's type under a
running server costs the one transaction that meets it per statement and session; the next use
prepares it again.
"""

import itertools
import re
import threading
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import NotSupportedError, connection
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators
from django.db.transaction import TransactionManagementError

# Stand-ins: each value is compiled twice, with two different stand-ins; the parameters that differ
# between the two are its slots, and a constant of the statement never does. Ints stay inside a
# small integer field's range (Django drops a comparison with an out-of-range int from the SQL).
_STAND_IN_INT = 20_000
_STAND_IN_TIME = datetime(1901, 2, 3, 4, 5, 6, tzinfo=UTC)
_STAND_IN_UUID = 0x5EED_0000_0000_4000_8000_0000_0000_0000


def as_uuid(value: uuid.UUID | str) -> uuid.UUID | None:
    """A uuid to bind (a url's or a caller's text made one), or None when the text is none: a
    compiled query binds a uuid as a uuid, never its text."""
    if isinstance(value, uuid.UUID):
        return value
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def _as_param(value: Any) -> Any:
    """A value as the compiled parameters carry it (a datetime or uuid adapted as its field adapts it)."""
    if isinstance(value, datetime):
        return connection.ops.adapt_datetimefield_value(value)
    if isinstance(value, uuid.UUID) and not connection.features.has_native_uuid_field:
        return value.hex
    return value


def _stand_in(value: Any, number: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | datetime | uuid.UUID):
        raise ImproperlyConfigured(
            f"a compiled query binds ints, datetimes, uuids and lists of them only, not {value!r}"
        )
    if isinstance(value, datetime):
        return _STAND_IN_TIME + timedelta(seconds=number)
    if isinstance(value, uuid.UUID):
        return uuid.UUID(int=_STAND_IN_UUID + number)
    return _STAND_IN_INT + number


def _is_many(value: Any) -> bool:
    return isinstance(value, list | tuple)


_STATEMENT_NUMBERS = itertools.count(1)
_PLACEHOLDER = re.compile(r"%[%s]")


def _positional(sql: str) -> str:
    """Django's `%s` placeholders as PREPARE's `$1, $2, ...` (and `%%` as the `%` it stands for)."""
    numbers = itertools.count(1)
    return _PLACEHOLDER.sub(lambda match: "%" if match.group() == "%%" else f"${next(numbers)}", sql)


# PostgreSQL refuses to run a prepared statement whose columns' types changed since its PREPARE
# (a migration that alters a selected column: a varchar's length, say).
RESULT_TYPE_CHANGED = "cached plan must not change result type"


@dataclass
class _SessionStatements:
    """This thread's database session's statements: those PREPAREd, and those to prepare again
    (DEALLOCATE first) because their result type changed under them."""

    raw: Any
    prepared: set[str]
    stale: set[str]


def _prepared_here() -> _SessionStatements:
    """The statements of this thread's database session (a new session, after a reconnect, has none)."""
    raw = connection.connection
    held = getattr(connection, "_compiled_queries_prepared", None)
    if held is None or held.raw is not raw:
        held = _SessionStatements(raw=raw, prepared=set(), stale=set())
        connection._compiled_queries_prepared = held  # type: ignore[attr-defined]
    return held


# Where a value goes among the parameters: (parameter index, value name, item of a list or None).
Slot = tuple[int, str, int | None]
Compiled = tuple[str, tuple[Any, ...], tuple[Slot, ...]]
Key = tuple[str, Hashable, tuple[tuple[str, int | None], ...]]


@dataclass(frozen=True)
class _Statement:
    """A shape's PostgreSQL prepared statement: its name, its PREPARE, and the EXECUTE to bind."""

    name: str
    prepare: str
    execute: str


def _key(shape: Hashable, values: Mapping[str, Any]) -> Key:
    """A list's length is part of the shape: `pk IN (%s, %s, %s)` has a slot per item."""
    names = tuple(sorted((name, len(value) if _is_many(value) else None) for name, value in values.items()))
    return (connection.alias, shape, names)


@dataclass(frozen=True)
class _Instances:
    """How rows of a compiled model read become instances (what Django's ModelIterable works out
    on every iteration): the compiler, for its converters; the model's columns; the populators of
    the select_related objects."""

    compiler: Any
    converters: dict[int, Any]
    model: type[Model]
    start: int
    end: int
    init_list: list[str]
    related_populators: list[Any]
    locks: bool


class CompiledQuery:
    """A queryset's SQL compiled once per shape (and database), bound to each call's values."""

    def __init__(self, build: Callable[[Hashable, Mapping[str, Any]], QuerySet[Any]], *, prepare: bool = False) -> None:
        self._build = build
        self._prepare = prepare
        self._compiled: dict[Key, Compiled] = {}
        self._instances: dict[Key, _Instances] = {}
        self._statements: dict[Key, _Statement] = {}
        self._lock = threading.Lock()

    def bind(self, shape: Hashable, **values: Any) -> tuple[str, list[Any]]:
        """(sql, params) of the shape's statement with these values (ints, datetimes, uuids, or a
        list or tuple of them: its length is part of the shape)."""
        key = _key(shape, values)
        compiled = self._compiled.get(key)
        if compiled is None:
            with self._lock:
                compiled = self._compiled.get(key) or self._compile(shape, values, key)
                self._compiled[key] = compiled
        sql, params, slots = compiled
        bound = list(params)
        for index, name, item in slots:
            bound[index] = _as_param(values[name] if item is None else values[name][item])
        return sql, bound

    def fetch(self, shape: Hashable, **values: Any) -> list[tuple[Any, ...]]:
        """The rows of the shape's statement with these values."""
        if any(_is_many(value) and not value for value in values.values()):
            return list(self._build(shape, values))  # `IN ()` has no SQL: the ORM's own answer
        sql, params = self.bind(shape, **values)
        return self._rows(_key(shape, values), sql, params)

    def _rows(self, key: Key, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        """The statement's rows, run as a prepared statement where the database has them."""
        statement = self._statement(key, sql)
        with connection.cursor() as cursor:
            if statement is None:
                cursor.execute(sql, params)
            else:
                session = _prepared_here()
                if statement.name not in session.prepared:
                    # Around Django's cursor wrappers: the session's set-up, not one of the
                    # request's statements (query counts and logs see the EXECUTEs).
                    stale = f"DEALLOCATE {statement.name}; " if statement.name in session.stale else ""
                    with connection.connection.cursor() as raw:
                        raw.execute(stale + statement.prepare)
                    session.prepared.add(statement.name)
                    session.stale.discard(statement.name)
                try:
                    cursor.execute(statement.execute, params)
                except NotSupportedError as refused:
                    if RESULT_TYPE_CHANGED in str(refused):
                        # This transaction is lost; the next use prepares the statement again.
                        session.prepared.discard(statement.name)
                        session.stale.add(statement.name)
                    raise
            return list(cursor.fetchall())

    def _statement(self, key: Key, sql: str) -> _Statement | None:
        if not (self._prepare and connection.vendor == "postgresql" and settings.DATABASE_PREPARED_STATEMENTS):
            return None
        statement = self._statements.get(key)
        if statement is None:
            name = f"nli_compiled_{next(_STATEMENT_NUMBERS)}"
            count = len(_PLACEHOLDER.findall(sql.replace("%%", "")))
            statement = _Statement(
                name=name,
                prepare=f"PREPARE {name} AS {_positional(sql)}",
                execute=f"EXECUTE {name}({', '.join(['%s'] * count)})" if count else f"EXECUTE {name}",
            )
            self._statements[key] = statement
        return statement

    def objects(self, shape: Hashable, **values: Any) -> list[Any]:
        """The model instances of the shape's queryset with these values, as iterating it gives
        them, select_related objects included (a builder's prefetch_related and annotations are
        not supported: refused when compiled)."""
        if any(_is_many(value) and not value for value in values.values()):
            return list(self._build(shape, values))  # `IN ()` has no SQL: the ORM's own answer
        sql, params = self.bind(shape, **values)
        key = _key(shape, values)
        how = self._instances.get(key)
        if how is None:
            raise ImproperlyConfigured("objects() reads model instances: the builder's queryset gives other rows")
        if how.locks and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        rows = self._rows(key, sql, params)
        if how.converters:
            rows = list(how.compiler.apply_converters(rows, how.converters))
        instances = []
        for row in rows:
            instance = how.model.from_db(connection.alias, how.init_list, row[how.start : how.end])
            for populator in how.related_populators:
                populator.populate(row, instance)
            instances.append(instance)
        return instances

    def _compile(self, shape: Hashable, values: Mapping[str, Any], key: Key) -> Compiled:
        first, second = (self._stand_ins(values, variant) for variant in (0, 1))
        queryset = self._build(shape, first)
        compiler = queryset.query.get_compiler(connection=connection)
        sql, params = compiler.as_sql()
        other_sql, other_params = self._build(shape, second).query.get_compiler(connection=connection).as_sql()
        if queryset._iterable_class is ModelIterable and not queryset.query.annotation_select:
            if getattr(queryset, "_prefetch_related_lookups", ()):
                raise ImproperlyConfigured(
                    "a compiled query does not prefetch: read the related rows in a query of their own"
                )
            self._instances[key] = _model_rows(
                compiler, bool(queryset.query.select_for_update and connection.features.has_select_for_update)
            )
        # Each stand-in of the first build as the parameters carry it (type and value: 1 is not "1").
        where: dict[tuple[type, Any], tuple[str, int | None]] = {}
        for name, stand_in in first.items():
            for item, one in enumerate(stand_in) if isinstance(stand_in, list) else [(None, stand_in)]:
                param = _as_param(one)
                where[(type(param), param)] = (name, item)
        slots = tuple(
            (index, *where[(type(param), param)])
            for index, (param, other) in enumerate(zip(params, other_params, strict=False))
            if param != other and (type(param), param) in where
        )
        taken = {(name, item) for _, name, item in slots}
        if sql != other_sql or len(params) != len(other_params) or len(taken) < len(where):
            missing = sorted({name for name, item in where.values() if (name, item) not in taken}) or sorted(first)
            raise ImproperlyConfigured(f"the compiled statement does not take {', '.join(missing)} as parameters")
        return str(sql), tuple(params), slots

    @staticmethod
    def _stand_ins(values: Mapping[str, Any], variant: int) -> dict[str, Any]:
        """A stand-in for every value (an item for every item of a list), all different, and
        different again in the other variant."""
        numbers = iter(range(variant, 2_000_000, 2))
        return {
            name: [_stand_in(item, next(numbers)) for item in value]
            if _is_many(value)
            else _stand_in(value, next(numbers))
            for name, value in sorted(values.items())
        }


def _model_rows(compiler: Any, locks: bool) -> _Instances:
    """What ModelIterable works out from a compiled model query, worked out once."""
    select, klass_info = compiler.select, compiler.klass_info
    fields = [expression for expression, _, _ in select[: compiler.col_count]]
    first, last = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    return _Instances(
        compiler=compiler,
        converters=compiler.get_converters(fields),
        model=klass_info["model"],
        start=first,
        end=last,
        init_list=[column[0].target.attname for column in select[first:last]],
        # Django 5.2's signature (the stubs describe a later one with a fetch mode).
        related_populators=get_related_populators(klass_info, select, compiler.using),  # type: ignore[call-arg]
        locks=locks,
    )
