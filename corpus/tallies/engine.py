"""The tally engine: tables of signed deltas that other code sums instead of scanning.

A maintained tally (`Maintained`) is a few tables of append-only deltas (`corpus.tallies.models.Tally`)
and the truth they follow. A writer INSERTs signed deltas in its own transaction (`insert_deltas`;
never an UPDATE of a shared row, so concurrent validators do not serialise on a counter). A figure
is the SUM of `n` over its key; `fold` replaces every delta by one row per key now and then (on the
beat schedule, after a long writer, by the `fold_tallies` command; never inside a writer's request).
An import nets its own deltas as it goes (`deltas_gathered`) and adds the sums at its end (`_merge`).
`check_and_rebuild` compares a tally with its truth, as of one snapshot, and rebuilds it without
making writers wait. corpus/tallies/README.md lists the tallies with their writers and signals.
"""

import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Model, QuerySet, Sum
from django.dispatch import Signal

from base.plain_rows import insert_rows, insert_rows_together

from .. import signals
from ..models import Dataset
from ..scope import EVERYTHING, Scope
from .models import Tally

FOLD_LOCK = 0x7A11E5  # advisory lock key: one fold (or check and rebuild) at a time (PostgreSQL)

# A tally key (the values of a table's key names, in order), rows by key, and each table's rows.
Key = tuple[Any, ...]
Rows = Mapping[Key, int]
Truth = dict[type[Tally], Rows]

# --- folding -------------------------------------------------------------------------------------


@contextmanager
def folds_deferred() -> Iterator[None]:
    """A long writer's block (hundreds of commits of deltas), folded once when it ends."""
    yield
    fold()


def fold() -> int:
    """Replace every delta by one row per key (sum of n, zero sums dropped); returns rows folded.

    One statement a table, `WITH gone AS (DELETE ... RETURNING) INSERT ... SELECT sum(n) FROM gone`,
    so exactly the rows deleted are summed; uncommitted deltas stay as they are. A concurrent fold
    is skipped. Outside a transaction, the tables it folded are then vacuumed (`_vacuum`).
    """
    folded, tables = _fold()
    if folded:
        signals.tallies_folded.send(sender=fold)
    _vacuum(tables)
    return folded


# The memory a fold's grouping may take (its transaction only): the keys of a MultiNLI-scale word
# tally hashed at once, not in batches spilled to disk (the server's default is a few MB).
FOLD_WORK_MEM = "64MB"


def _grouped(model: type[Tally], name: str) -> str:
    """A key column as a fold groups and compares it: text in the "C" collation, the same groups as
    the database's own collation gives, without the cost of a sort by locale (3 s for 367k words)."""
    name = column(model, name)
    text = model._meta.get_field(name.removesuffix("_id")).get_internal_type() in ("CharField", "TextField")
    return f'{name} COLLATE "C"' if text else name


def _fold() -> tuple[int, list[str]]:
    """The fold under the folds' lock: (rows written, the tables whose rows it replaced)."""
    folded, replaced = 0, []
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [FOLD_LOCK])
        acquired = cursor.fetchone()
        if not (acquired and acquired[0]):
            return 0, []
        cursor.execute("SELECT set_config('work_mem', %s, true)", [FOLD_WORK_MEM])
        for model, key_names in _folded():
            table, names = model._meta.db_table, [column(model, name) for name in key_names]
            columns = ", ".join(names)
            keys = ", ".join(f"{_grouped(model, name)} AS {column(model, name)}" for name in key_names)
            same_key = " AND ".join(f"t.{_grouped(model, name)} = d.{column(model, name)}" for name in key_names)
            positions = ", ".join(str(position) for position in range(1, len(names) + 1))
            # Only the keys with more than one row are rewritten, not every word row of the corpus.
            cursor.execute(
                f"WITH d AS (SELECT {keys} FROM {table} GROUP BY {positions} HAVING count(*) > 1), "
                f"gone AS (DELETE FROM {table} AS t USING d WHERE {same_key} "
                f"RETURNING {', '.join(f't.{name}' for name in names)}, t.n) "
                f"INSERT INTO {table} ({columns}, n) "
                f"SELECT {keys}, sum(n) FROM gone GROUP BY {positions} HAVING sum(n) <> 0"
            )
            if cursor.rowcount:
                folded += cursor.rowcount
                replaced.append(table)
    return folded, replaced


def _vacuum(tables: Sequence[str]) -> None:
    """VACUUM the tables a fold replaced rows of, once it has committed, so the rows it deleted become
    room for the next deltas (autovacuum is off on some servers, and each fold grew the tables by
    the rows it wrote). Not inside a caller's transaction, where VACUUM cannot run."""
    if not tables or connection.in_atomic_block:
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM {', '.join(quote(table) for table in tables)}")


def _folded() -> list[tuple[type[Tally], Sequence[str]]]:
    return [table for maintained in MAINTAINED.values() for table in maintained.tables]


def column(model: type[Model], key_name: str) -> str:
    """The database column of a concrete field (`genre_id` or `genre` names the `genre` foreign key's)."""
    model_field = model._meta.get_field(key_name.removesuffix("_id"))
    assert isinstance(model_field, Field) and model_field.column  # a concrete field with a column
    return model_field.column


@dataclass
class _Gathered:
    """A `deltas_gathered` block's deltas not yet written, and the tables it staged already (`_stage`)."""

    deltas: dict[tuple[type[Tally], tuple[str, ...]], Counter[Key]] = field(default_factory=dict)
    keys: int = 0
    staged: set[tuple[type[Tally], tuple[str, ...]]] = field(default_factory=set)


class _Blocks(threading.local):
    """The open `deltas_gathered` block of this thread (a request served beside an import in the
    embedded mode writes its deltas in its own transaction)."""

    def __init__(self) -> None:
        self.open: list[_Gathered] = []


_blocks = _Blocks()

# A gathered block moves what it holds in memory to its staging tables once it holds this many
# keys (a few hundred bytes a key): memory stays bounded, and the tally still gains one row per key
# the block touched, whatever its size.
GATHERED_KEYS_WRITTEN_AT = 400_000


@contextmanager
def deltas_gathered() -> Iterator[None]:
    """A long writer in ONE transaction (a corpus import): every delta its block appends is netted
    per key (in memory, beyond `GATHERED_KEYS_WRITTEN_AT` keys in a temporary table: `_stage`) and
    added to the tally's rows when the block ends (`_merge`): the tally gains a row only for a key
    it lacked. Only for a block whose own transaction does not read the tallies it writes before
    the block ends (the sums would miss what is held). A block inside another is part of it."""
    if _blocks.open:
        yield
        return
    gathered = _Gathered()
    _blocks.open.append(gathered)
    try:
        yield
    finally:
        _blocks.open.remove(gathered)
    _write_gathered(gathered)  # not on an error: the transaction rolls back anyway


def _staging_table(model: type[Tally]) -> str:
    return f"{model._meta.db_table}_gathered"


def _stage(gathered: _Gathered) -> None:
    """Move the held deltas to a temporary table per tally (dropped at the latest when the
    transaction ends): appended as they are, summed per key once, when the block ends."""
    quote = connection.ops.quote_name
    for (model, key_names), deltas in gathered.deltas.items():
        columns = [column(model, name) for name in (*key_names, "n")]
        if (model, key_names) not in gathered.staged:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"CREATE TEMPORARY TABLE IF NOT EXISTS {quote(_staging_table(model))} ON COMMIT DROP AS"
                    f" SELECT {', '.join(quote(name) for name in columns)} FROM {quote(model._meta.db_table)}"
                    " WHERE false"
                )
            gathered.staged.add((model, key_names))
        insert_rows(_staging_table(model), columns, [(*key, n) for key, n in deltas.items() if n])
    gathered.deltas.clear()
    gathered.keys = 0


def _write_held(gathered: _Gathered) -> None:
    for (model, key_names), deltas in gathered.deltas.items():
        _insert(model, key_names, deltas)
    gathered.deltas.clear()
    gathered.keys = 0


def _write_gathered(gathered: _Gathered) -> None:
    """The block's sums merged into the tallies (`_merge`); outside a transaction, where no staging
    table outlives a statement, appended as they are."""
    if not connection.in_atomic_block:
        _write_held(gathered)
        return
    _stage(gathered)  # what is still held joins what was staged
    if not gathered.staged:
        return
    with connection.cursor() as cursor:
        # No fold between the merge's read of the rows it adds to and its commit: a fold committed
        # meanwhile would have deleted the row the merge updates, and the sum with it.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FOLD_LOCK])
    for model, key_names in sorted(gathered.staged, key=lambda staged: staged[0]._meta.db_table):
        _merge(model, key_names, _staging_table(model))
    gathered.staged.clear()


def _merge(model: type[Tally], key_names: Sequence[str], staging: str) -> None:
    """Add the staging table's sums per key to the tally's rows: to one row of each key that has
    one, under a new id (a moved sum has a newer row: artifacts.listings reads it so), else as a new
    row; a row whose sum comes to zero is deleted."""
    quote = connection.ops.quote_name
    table, names = quote(model._meta.db_table), [column(model, name) for name in key_names]
    columns = ", ".join(names)
    keys = ", ".join(f"{_grouped(model, name)} AS {name}" for name in names)
    same_key = " AND ".join(f"t.{_grouped(model, name)} = s.{name}" for name in names)
    kept_key = " AND ".join(f"k.{name} = s.{name}" for name in names)
    summed_key = ", ".join(f"s.{name}" for name in names)
    positions = ", ".join(str(position) for position in range(1, len(names) + 1))
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH s AS (SELECT {keys}, SUM(n) AS n FROM {quote(staging)} GROUP BY {positions} HAVING SUM(n) <> 0), "
            f"k AS (SELECT DISTINCT ON ({summed_key}) t.id, {summed_key}, s.n FROM {table} AS t JOIN s ON {same_key} "
            f"ORDER BY {summed_key}, t.id DESC), "
            f"added AS (INSERT INTO {table} ({columns}, n) SELECT {columns}, n FROM s "
            f"WHERE NOT EXISTS (SELECT 1 FROM k WHERE {kept_key})), "
            f"moved AS (UPDATE {table} AS t SET n = t.n + k.n, id = DEFAULT FROM k WHERE t.id = k.id RETURNING t.id, t.n) "
            "SELECT id FROM moved WHERE n = 0"
        )
        zeroed = [row[0] for row in cursor.fetchall()]
        if zeroed:
            cursor.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", [zeroed])
        cursor.execute(f"DROP TABLE {quote(staging)}")


def insert_deltas(model: type[Tally], key_names: Sequence[str], deltas: Rows) -> int:
    """Append signed deltas to a table of MAINTAINED: one row per non-zero delta, as multi-row
    INSERTs of plain values (an object per row cost as much as a fix batch's own UPDATE). Returns
    rows inserted (inside `deltas_gathered`: held, netted with the block's other deltas)."""
    if _blocks.open:
        gathered = _blocks.open[-1]
        held = gathered.deltas.setdefault((model, tuple(key_names)), Counter())
        before = len(held)
        for key, n in deltas.items():
            if n:
                held[key] += n
        gathered.keys += len(held) - before
        if gathered.keys >= GATHERED_KEYS_WRITTEN_AT:
            if connection.in_atomic_block:
                _stage(gathered)
            else:  # no transaction to hold a staging table: written as they are
                _write_held(gathered)
        return sum(1 for n in deltas.values() if n)
    return _insert(model, key_names, deltas)


def _insert(model: type[Tally], key_names: Sequence[str], deltas: Rows) -> int:
    rows = [(*key, n) for key, n in deltas.items() if n]
    columns = [column(model, name) for name in (*key_names, "n")]
    insert_rows(model._meta.db_table, columns, rows)
    return len(rows)


def delete_started_from(origin: Any, models: Sequence[type[Model]]) -> bool:
    """Whether the delete a pre_delete receiver is told of (its `origin`) started from one of
    `models`. A tally's receiver takes its deleted rows out only then: a delete started from a
    parent its rows name removes the tally's own rows by CASCADE, and a delta would count them twice."""
    model = origin.model if isinstance(origin, QuerySet) else type(origin)
    return model in models


def insert_deltas_together(parts: Sequence[tuple[type[Tally], Sequence[str], Rows]]) -> None:
    """`insert_deltas` of several tables, each (model, key names, deltas), in one statement."""
    if _blocks.open:
        for model, key_names, deltas in parts:
            insert_deltas(model, key_names, deltas)
        return
    insert_rows_together(
        [
            (
                model._meta.db_table,
                [column(model, name) for name in (*key_names, "n")],
                [(*key, n) for key, n in deltas.items() if n],
            )
            for model, key_names, deltas in parts
        ]
    )


# --- reading -------------------------------------------------------------------------------------


def summed(tallies: QuerySet[Any], by: Sequence[str]) -> list[Key]:
    """[(*by, n)] summed over tally rows (`scoped`), non-zero sums only: one grouped statement."""
    rows = tallies.order_by().values_list(*by).annotate(total=Sum("n"))
    return [tuple(row) for row in rows if row[-1]]


def _read(tallies: QuerySet[Any], key_names: Sequence[str]) -> dict[Key, int]:
    return {row[:-1]: row[-1] for row in summed(tallies, key_names)}


def scoped(model: type[Tally], scope: Scope = EVERYTHING, scheme: str | None = None) -> QuerySet[Any]:
    """A tally's rows of a scope (of several datasets and a `scheme`: the datasets of that scheme)."""
    return scope.rows(model._default_manager.all(), scheme=scheme)


# --- verification and repair ---------------------------------------------------------------------

SHOWN_DRIFT = 10


@dataclass
class Drift:
    source: str  # what the truth is counted from
    keys: int = 0  # keys whose maintained sum differs from the truth
    rows: int = 0  # Σ |maintained - truth| over those keys
    examples: list[tuple[str, Key, int, int]] = field(default_factory=list)
    rebuilt: bool = False

    def summary(self) -> str:
        lines = [f"maintained aggregates drifting from {self.source}: {self.keys} keys, {self.rows} rows"]
        for table, key, maintained, truth in self.examples:
            lines.append(f"    {table} {key}: maintained {maintained} truth {truth}")
        if self.rebuilt:
            lines.append(f"maintained aggregates rebuilt from {self.source}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Maintained:
    """Tables of signed deltas and what their truth is counted from."""

    name: str
    tables: tuple[tuple[type[Tally], Sequence[str]], ...]  # each table and its key
    truth: Callable[[Dataset | None], Truth]  # every table's rows counted afresh, of a dataset or all
    source: str  # what the truth is counted from
    receivers: tuple[tuple[Signal, Callable[..., Any]], ...] = ()  # the corpus.signals these tables follow

    def register(self) -> None:
        """Fold, check and rebuild these tables with the rest, and connect their receivers."""
        MAINTAINED[self.name] = self
        for signal, receiver in self.receivers:
            signal.connect(receiver, dispatch_uid=f"{self.name}-tally-{receiver.__name__}")


# Every maintained tally by name (README.md in this package lists them).
MAINTAINED: dict[str, Maintained] = {}


def check_and_rebuild(
    dataset: Dataset | None = None, maintained: Maintained | None = None, *, repair: bool = True
) -> Drift:
    """The drift of these tallies (of a dataset, or all) from their truth, and (with `repair`)
    their rebuild from it: one row per key. Without `maintained`, the corpus's own tallies.

    The truth is counted, the tallies read and the visible deltas deleted as of one snapshot
    (`one_snapshot_without_folds`), so a delta committed after it is neither in the truth nor
    deleted and stays on top of the rebuilt rows. The folds' lock keeps folds and merges out
    meanwhile: a fold committed after the snapshot would replace deltas by sums it cannot see.
    """
    maintained = maintained or MAINTAINED["corpus"]
    report = Drift(source=maintained.source)
    with one_snapshot_without_folds():
        truth = maintained.truth(dataset)
        for model, key_names in maintained.tables:
            rows = scoped(model, Scope.of_dataset(dataset))
            kept, counted = _read(rows, key_names), truth[model]
            for key in sorted(set(kept) | set(counted), key=repr):
                have, want = kept.get(key, 0), counted.get(key, 0)
                if have != want:
                    report.keys += 1
                    report.rows += abs(have - want)
                    if len(report.examples) < SHOWN_DRIFT:
                        report.examples.append((model.__name__, key, have, want))
            if repair:
                rows.delete()
                insert_deltas(model, key_names, counted)
        report.rebuilt = repair
    return report


@contextmanager
def one_snapshot_without_folds() -> Iterator[None]:
    """A transaction of one snapshot with no fold running meanwhile (FOLD_LOCK held).

    Outermost, the lock is taken first, as a session lock, and only then a REPEATABLE READ
    transaction begins: a fold that held the lock while the snapshot was taken would commit after
    it, and the rebuild's DELETE would fail to serialise with it. Inside a caller's transaction
    (tests) its isolation stays and the lock is the transaction's.
    """
    if connection.in_atomic_block:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [FOLD_LOCK])
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [FOLD_LOCK])
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [FOLD_LOCK])
