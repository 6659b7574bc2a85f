"""Bulk writes: what every import of many rows does so that it leaves behind neither a pile of tally
deltas nor stale planner statistics of the tables it filled.

`bulk_import(*models)`, around an import's writes inside its one transaction: every tally delta is
netted per key as it goes (`corpus.tallies.deltas_gathered`), and once the transaction commits the
tables it changed are vacuumed and analysed (`refresh`). An import that commits chunk by chunk asks
for the refresh once, around all of them (`refreshed_when_committed`).

The refresh is the import's own because autovacuum analyses a table only after its next pass (and
is off on some servers): until then every statement is planned as if the imported rows did not
exist, and a plan that is right only on fresh statistics reads whole tables.
"""

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

from django.db import connection, transaction
from django.db.models import Model

from . import tallies


def tables_of(*models: type[Model], tables: Iterable[str] = ()) -> list[str]:
    """The tables of these models, the `tables` named, and every maintained tally's, each once."""
    names = [model._meta.db_table for model in models]
    names += tables
    names += [model._meta.db_table for maintained in tallies.MAINTAINED.values() for model, _ in maintained.tables]
    return list(dict.fromkeys(names))


# A table is refreshed after an import once the rows written into it since its last ANALYZE exceed this
# share of the rows it held then (autovacuum's own share for an ANALYZE): a recast of a hundred pairs
# into a corpus of millions reads no table again.
CHANGED_SHARE = 0.1


def changed(tables: Sequence[str]) -> list[str]:
    """Those of `tables` whose rows written since their last ANALYZE exceed `CHANGED_SHARE` of the
    rows they held then (PostgreSQL's `n_mod_since_analyze`, this session's writes flushed first)."""
    if not tables:
        return []
    with connection.cursor() as cursor:
        if connection.pg_version >= 150000:  # type: ignore[attr-defined]  # PostgreSQL's connection
            cursor.execute("SELECT pg_stat_force_next_flush()")  # counted once this statement ends
        cursor.execute(
            "SELECT t.name FROM unnest(%s::text[]) WITH ORDINALITY AS t(name, position)"
            " JOIN pg_class c ON c.oid = to_regclass(t.name)"
            " LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid"
            " WHERE coalesce(s.n_mod_since_analyze, 1) > %s * greatest(c.reltuples, 0) ORDER BY t.position",
            [list(tables), CHANGED_SHARE],
        )
        return [name for (name,) in cursor.fetchall()]


def refresh(tables: Sequence[str]) -> None:
    """VACUUM (ANALYZE) those of `tables` an import has changed, in one statement (inside a
    transaction, where VACUUM cannot run and its writes are not counted yet, ANALYZE of them all).
    The VACUUM removes the row versions the import left behind (a dead premise row per imported
    premise, still in the claim index) and marks the pages all-visible."""
    if not tables:
        return
    inside = connection.in_atomic_block
    stale = list(tables) if inside else changed(tables)
    if not stale:
        return
    verb = "ANALYZE" if inside else "VACUUM (ANALYZE)"
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"{verb} {', '.join(quote(name) for name in stale)}")


def refresh_when_committed(tables: Sequence[str]) -> None:
    """`refresh` once the current transaction commits (VACUUM cannot run in it, and an ANALYZE would
    hold its lock to its end). A failed refresh is logged, never the import's failure."""
    transaction.on_commit(partial(refresh, list(tables)), robust=True)


@contextmanager
def refreshed_when_committed(*models: type[Model], tables: Iterable[str] = ()) -> Iterator[None]:
    """A block of bulk writes into these models' tables (and the `tables` named), all tallies with
    them: refreshed once the transaction that holds the block commits; never when the block fails."""
    yield
    refresh_when_committed(tables_of(*models, tables=tables))


@contextmanager
def bulk_import(*models: type[Model], tables: Iterable[str] = ()) -> Iterator[None]:
    """An import's writes in its ONE transaction: tally deltas netted per key, tables refreshed once it commits."""
    with refreshed_when_committed(*models, tables=tables), tallies.deltas_gathered():
        yield
