"""Bulk writes: what every import of many rows does so that it leaves behind neither a pile of tally
deltas nor the planner's statistics of the tables before it (stale statistics plan the next
statements as if the import had not happened).

`bulk_import(*models)`, around an import's writes inside its one transaction: every tally delta is
netted per key as it goes (`corpus.tallies.deltas_gathered`), and once the transaction commits the
tables it changed, every maintained tally among them, are vacuumed and analysed (`refresh`). An import
that commits chunk by chunk gathers each chunk's deltas in the chunk's transaction and asks for the
refresh once, around all of them (`refreshed_when_committed`).

Why the refresh is the import's own: autovacuum analyses a table only after its next pass (and is
off on some servers); until then every statement over the tables is planned on the statistics of
before the import, where the imported rows do not exist (a table 10x larger than the planner
believes, a dataset that has no rows, claims whose expiry lies past the end of the histogram), and
reads past the row versions the import left behind. A plan that is right only on fresh statistics
then reads whole tables; ANALYZE reads a sample of each table (seconds at MultiNLI scale).
"""

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial

from django.db import connection, transaction
from django.db.models import Model

from . import tallies


def tables_of(*models: type[Model], tables: Iterable[str] = ()) -> list[str]:
    """The tables of these models, the `tables` named, and every maintained tally's
    (corpus.tallies.MAINTAINED), each once: what an import that writes tally deltas fills."""
    names = [model._meta.db_table for model in models]
    names += tables
    names += [model._meta.db_table for maintained in tallies.MAINTAINED.values() for model, _ in maintained.tables]
    return list(dict.fromkeys(names))


# A table is refreshed after an import once the rows written into it since its last ANALYZE exceed this
# share of the rows it held then (autovacuum's own share for an ANALYZE): a recast of a hundred pairs
# into a corpus of millions reads no table again.
CHANGED_SHARE = 0.1


def changed(tables: Sequence[str]) -> list[str]:
    """Those of `tables` whose rows inserted, updated and deleted since their last ANALYZE exceed
    `CHANGED_SHARE` of the rows they held then (a table never analysed, at the first row):
    PostgreSQL's own count (`n_mod_since_analyze`), this session's writes flushed to it first."""
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
    """VACUUM (ANALYZE) those of `tables` an import has changed (`changed`), in one statement
    (inside a transaction, where VACUUM cannot run and the transaction's writes are not
    counted yet, ANALYZE of them all). The ANALYZE gives the planner the rows the import added; the
    VACUUM removes the row versions the import left behind (every imported premise's count of
    writings is raised after its pairs: a dead premise row per imported premise, still in the
    claim index, which the first writing claim after the import would walk) and marks the
    pages all-visible."""
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
    """`refresh` once the current transaction commits (at once outside one): VACUUM cannot run in
    it, an ANALYZE inside it would hold its lock on each table to the end of the transaction, and
    samples taken before the commit are of rows nobody else sees yet. A failed refresh is logged,
    never the import's failure (`robust`)."""
    transaction.on_commit(partial(refresh, list(tables)), robust=True)


@contextmanager
def refreshed_when_committed(*models: type[Model], tables: Iterable[str] = ()) -> Iterator[None]:
    """A block of bulk writes into these models' tables (and the `tables` named), all tallies with
    them: refreshed once the transaction that holds the block commits (or at its end, outside one);
    never when the block fails."""
    yield
    refresh_when_committed(tables_of(*models, tables=tables))


@contextmanager
def bulk_import(*models: type[Model], tables: Iterable[str] = ()) -> Iterator[None]:
    """An import's writes in its ONE transaction: tally deltas netted per key (`deltas_gathered`) and
    the tables it filled refreshed once it commits (`refreshed_when_committed`)."""
    with refreshed_when_committed(*models, tables=tables), tallies.deltas_gathered():
        yield
