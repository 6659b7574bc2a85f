"""Statements of a fixed shape whose plans PostgreSQL keeps from one call to the next.

A statement sent as text is parsed and planned on every call: 0.3 to 1 ms of the server's CPU for
a claim's statements with their CTEs, more than running them. A server-side PREPARE keeps the plan,
but it belongs to one server connection, which a pooler in transaction mode hands to others. The
statements of a PL/pgSQL function keep their plans in whichever server connection runs them. So a
hot statement is written here once, as SQL with `%s` placeholders, and runs as the body of a
function:

    CLAIM = CachedStatement("collection_writing_claim", sql, ["bigint", "text", ...], outputs)
    rows = CLAIM.run([worker.pk, ...])  # what cursor.execute(sql, params) would give

A statement that must see what an earlier one locked (a lock, then a count under the lock) takes
that earlier one as its `prelude`: PL/pgSQL statements run first, each with a snapshot of its own,
setting variables the statement reads.

The function's name ends in a hash of its definition. A changed statement is a new function, so the
code never runs an older definition. The function is created the first time a process needs it, on a
connection of its own, and committed at once, so a caller's transaction that rolls back does not
take it away.
"""

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

# The placeholder of Django's PostgreSQL cursor (`%%` is a literal `%`, never the start of one).
_PLACEHOLDER = re.compile(r"(?<!%)%s")
_created: set[tuple[str, str]] = set()
_creating = threading.Lock()


@dataclass(frozen=True)
class CachedStatement:
    """One statement with `%s` placeholders, run as the body of a PL/pgSQL function. `parameters`:
    the SQL type of each placeholder, in order. `outputs`: the SQL type of each column the statement
    returns, in order. The caller passes exactly what it would pass to `cursor.execute(sql, params)`."""

    stem: str
    sql: str
    parameters: Sequence[str]
    outputs: Sequence[str]
    # PL/pgSQL statements run before the statement, each with a fresh snapshot, and the variables
    # they set (`declare`, as a DECLARE section lists them). Placeholders are numbered through
    # `declare` (a name for a parameter: `v_worker ALIAS FOR %s;`, which costs a call nothing), then
    # `prelude`, then the statement.
    prelude: str = ""
    declare: str = ""
    # Plan each statement once for the connection, never for the values of a call: for statements
    # whose plan does not depend on the values (an index walk with LIMIT 1, a lookup by key), the
    # custom plans PostgreSQL otherwise tries, and keeps trying when it estimates a generic plan
    # dearer, cost the planning the function exists to save.
    generic_plans: bool = False
    # Plan with sequential scans off, for statements that read only by keys, where an index is the
    # right path at any size. A kept plan is made once, for the tables as they were then: planned
    # while a table was empty (a new deployment's claims), a sequential scan of it costs nothing,
    # and the plan that keeps it reads the whole table on every call as it grows.
    index_scans: bool = False
    name: str = field(init=False)

    def __post_init__(self) -> None:
        placeholders = len(_PLACEHOLDER.findall(self.declare + self.prelude + self.sql))
        if placeholders != len(self.parameters):
            raise ValueError(f"{self.stem}: {placeholders} placeholders, {len(self.parameters)} parameter types")
        digest = hashlib.sha256(self.definition_of("").encode()).hexdigest()[:12]
        object.__setattr__(self, "name", f"{self.stem}_{digest}")

    def definition_of(self, name: str) -> str:
        """CREATE FUNCTION for this statement under `name`. The output columns are named out_1, out_2, ...
        so that no output name hides a table column of the same name inside the body."""
        numbered = iter(range(1, len(self.parameters) + 1))
        # `%%` is how a statement for cursor.execute writes a literal `%`.
        variables, prelude, body = (
            _PLACEHOLDER.sub(lambda _: f"${next(numbered)}", text).replace("%%", "%")
            for text in (self.declare, self.prelude, self.sql)
        )
        outputs = ", ".join(f"out_{index} {kind}" for index, kind in enumerate(self.outputs, 1))
        declare = f"DECLARE {variables} " if variables else ""
        planned = " SET plan_cache_mode = force_generic_plan" if self.generic_plans else ""
        if self.index_scans:
            planned += " SET enable_seqscan = off"
        return (
            f"CREATE OR REPLACE FUNCTION {name}({', '.join(self.parameters)}) RETURNS TABLE ({outputs})"
            f" LANGUAGE plpgsql VOLATILE{planned} AS $body$ {declare}BEGIN {prelude} RETURN QUERY {body}; END $body$"
        )

    @property
    def call(self) -> str:
        """The statement that runs the function: what a caller sends in place of `sql`."""
        # Each value cast to its parameter's type: a Python int arrives as an integer, which PostgreSQL
        # does not pass to a smallint parameter on its own.
        return f"SELECT * FROM {self.name}({', '.join(f'%s::{kind}' for kind in self.parameters)})"

    def run(self, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """The statement's rows for `params`, in the caller's transaction."""
        create_once(self)
        with connection.cursor() as cursor:
            cursor.execute(self.call, list(params))
            rows: list[tuple[Any, ...]] = cursor.fetchall()
        return rows


def create_once(statement: CachedStatement) -> None:
    """The statement's function, created in the database if this process has not yet seen it there.
    On a connection of its own: committed before the caller's transaction can roll it back."""
    key = (connection.settings_dict["NAME"], statement.name)
    if key in _created:
        return
    with _creating:
        if key in _created:
            return
        own = connection.get_new_connection(connection.get_connection_params())
        try:
            own.autocommit = True
            with own.cursor() as cursor:
                cursor.execute("SELECT to_regproc(%s) IS NOT NULL", [statement.name])
                (exists,) = cursor.fetchone()
                if not exists:
                    # One creator at a time: two CREATE OR REPLACE of one function at once fail with
                    # "tuple concurrently updated".
                    cursor.execute("SELECT pg_advisory_lock(hashtext(%s))", [statement.name])
                    try:
                        cursor.execute(statement.definition_of(statement.name))
                    finally:
                        cursor.execute("SELECT pg_advisory_unlock(hashtext(%s))", [statement.name])
        finally:
            own.close()
        _created.add(key)


def forget_created() -> None:
    """Forget which functions this process has seen in the database: the next run looks again."""
    with _creating:
        _created.clear()
