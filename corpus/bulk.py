"""Bulk writes: what every import of many rows does so that it leaves behind neither a pile of tally
deltas nor the planner's statistics of the tables before it (issue 53).

`bulk_import(*models)`, around an import's writes inside its one transaction: every tally delta is
netted per key as it goes (`corpus.tallies.deltas_gathered`), and once the transaction commits the
tables it filled are ANALYZEd with every maintained tally (`analyze_when_committed`). An import that
commits chunk by chunk gathers each chunk's deltas in the chunk's transaction and asks for the
ANALYZE once, around all of them.

Why the ANALYZE is the import's own: autovacuum analyses a table only after its next pass (and is
off on some servers); until then every statement over the tables is planned on the statistics of
before the import, where the imported rows do not exist (a table 10× larger than the planner
believes, a dataset that has no rows, claims whose expiry lies past the end of the histogram). A
plan that is right only on fresh statistics then reads whole tables; ANALYZE reads a sample of
each table (seconds at MultiNLI scale).
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


def analyze_tables(tables: Sequence[str]) -> None:
    """ANALYZE these tables (PostgreSQL's planner statistics), in one statement."""
    if not tables or connection.vendor != "postgresql":
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(quote(name) for name in tables)}")


def analyze_when_committed(tables: Sequence[str]) -> None:
    """`analyze_tables` once the current transaction commits (at once outside one): an ANALYZE inside
    the import's transaction would hold its lock on each table to the end of that transaction, and
    samples taken before the commit are of rows nobody else sees yet. A failed ANALYZE is logged,
    never the import's failure (`robust`)."""
    transaction.on_commit(partial(analyze_tables, list(tables)), robust=True)


@contextmanager
def analyzed_when_committed(*models: type[Model], tables: Iterable[str] = ()) -> Iterator[None]:
    """A block of bulk writes into these models' tables (and the `tables` named), all tallies with
    them: analysed once the transaction that holds the block commits (or at its end, outside one);
    never when the block fails."""
    yield
    analyze_when_committed(tables_of(*models, tables=tables))


@contextmanager
def bulk_import(*models: type[Model], tables: Iterable[str] = ()) -> Iterator[None]:
    """An import's writes in its ONE transaction: tally deltas netted per key (`deltas_gathered`) and
    the tables it filled analysed once it commits (`analyzed_when_committed`)."""
    with analyzed_when_committed(*models, tables=tables), tallies.deltas_gathered():
        yield
