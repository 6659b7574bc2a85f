"""The PostgreSQL export's lines, streamed by binary COPY (`selectors.export_lines_sql`).

One COPY builds lines on one core. An export outside any open transaction splits the pair ids
into chunks and runs `settings.EXPORT_STREAMS` COPYs at once, each on a connection of its own, all reading
ONE snapshot of the database: a coordinating connection opens a REPEATABLE READ transaction and
exports its snapshot (`pg_export_snapshot()`), and every chunk's transaction imports it (`SET
TRANSACTION SNAPSHOT`), as pg_dump's parallel workers do. So validators labelling meanwhile never
split a pair from its labels nor change the export halfway through. Each chunk's lines are held
(by route, in pair order) until the chunks before it are written, so the files come out in pair
order, byte for byte as one COPY writes them; at most `EXPORT_STREAMS + 1` chunks are in memory.

Inside a transaction already open (a caller's, a test's), other connections would not see what it
wrote: one COPY then runs on that transaction's own connection.
"""

import itertools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import psycopg2
from django.conf import settings
from django.db import connection

from . import selectors
from .writer import ExportLineSink, SplitWriter

# Pairs a chunk covers (by id). ~18 MB of lines for MultiNLI-like rows.
CHUNK_PAIRS = 25_000


class ChunkLines:
    """One chunk's lines by route, in pair order: what `ExportLineSink` writes while the chunk waits its turn."""

    def __init__(self):
        self.by_route = {}

    def lines_of(self, route):
        lines = self.by_route.get(route)
        if lines is None:
            lines = self.by_route[route] = RouteLines()
        return lines


class RouteLines:
    def __init__(self):
        self.jsonl, self.tsv = [], []

    def write_encoded(self, jsonl_line, tsv_line):
        self.jsonl.append(jsonl_line)
        self.tsv.append(tsv_line)


def stream_lines(
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    unvalidated_gold: str,
    upper_id: int,
    writer_for_route: Callable[[bytes], SplitWriter],
    on_rows: Callable[[int], None],
    every: int,
) -> int:
    """Write every exported pair's lines (ids up to `upper_id`) through `writer_for_route(route)`
    and return how many; `on_rows(rows_done)` after every chunk (on the one-COPY path every `every`
    rows). Outside an open transaction no COPY runs on the default connection, which stays free
    for saving the progress."""
    # Chunks start below the lowest pair id, not at 0: where ids start high (a table whose early
    # rows were deleted, or a test database after many tests) chunks from 0 were mostly empty, each a
    # connection of its own (one test exported 13 pairs through some 100,000 of them in 9 minutes).
    lowest = selectors.lowest_pair_id()
    start = lowest - 1 if lowest is not None else 0
    if connection.in_atomic_block or settings.EXPORT_STREAMS == 1 or upper_id - start <= CHUNK_PAIRS:
        return _one_copy((datasets, filters, unvalidated_gold), upper_id, writer_for_route, on_rows, every)
    return _chunks_in_parallel((datasets, filters, unvalidated_gold), start, upper_id, writer_for_route, on_rows)


def _copy(cursor, export, upper_id, lower_id, sink):
    """`export`: (datasets, filters, unvalidated_gold) of the snapshot."""
    datasets, filters, unvalidated_gold = export
    sql, params = selectors.export_lines_sql(
        datasets, filters, unvalidated_gold=unvalidated_gold, upper_id=upper_id, lower_id=lower_id
    )
    statement = cursor.mogrify(sql, params).decode()
    cursor.copy_expert(f"COPY ({statement}) TO STDOUT (FORMAT binary)", sink, size=1 << 16)
    if not sink.finished:
        raise RuntimeError("the export's COPY stream ended without its trailer")
    return sink.rows


def _one_copy(export, upper_id, writer_for_route, on_rows, every):
    sink = ExportLineSink(writer_for_route, on_rows, every)
    if connection.in_atomic_block:
        with connection.cursor() as cursor:
            return _copy(cursor.cursor, export, upper_id, 0, sink)
    with _raw_connection(connection.get_connection_params()) as raw:
        # One statement reads one snapshot; its own connection leaves this one free for progress.
        raw.autocommit = True
        with raw.cursor() as cursor:
            return _copy(cursor, export, upper_id, 0, sink)


def _chunks_in_parallel(export, start, upper_id, writer_for_route, on_rows):
    bounds = [*list(range(start, upper_id, CHUNK_PAIRS)), upper_id]
    chunks = list(itertools.pairwise(bounds))
    connection_params = connection.get_connection_params()
    with _raw_connection(connection_params) as coordinator:
        coordinator.set_session(isolation_level="REPEATABLE READ", readonly=True)
        with coordinator.cursor() as cursor:
            cursor.execute("SELECT pg_export_snapshot()")
            (snapshot_id,) = cursor.fetchone()

        def copy_chunk(lower_id, chunk_upper_id):
            lines = ChunkLines()
            with _raw_connection(connection_params) as raw:
                raw.set_session(isolation_level="REPEATABLE READ", readonly=True)
                with raw.cursor() as cursor:
                    cursor.execute("SET TRANSACTION SNAPSHOT %s", [snapshot_id])
                    _copy(cursor, export, chunk_upper_id, lower_id, ExportLineSink(lines.lines_of))
                raw.rollback()
            return lines

        rows = 0
        streams = settings.EXPORT_STREAMS
        with ThreadPoolExecutor(max_workers=streams, thread_name_prefix="export-copy") as pool:
            pending = [pool.submit(copy_chunk, *chunk) for chunk in chunks[: streams + 1]]
            next_chunk = len(pending)
            try:
                while pending:
                    lines = pending.pop(0).result()
                    if next_chunk < len(chunks):
                        pending.append(pool.submit(copy_chunk, *chunks[next_chunk]))
                        next_chunk += 1
                    for route, route_lines in lines.by_route.items():
                        writer_for_route(route).extend_encoded(route_lines.jsonl, route_lines.tsv)
                        rows += len(route_lines.jsonl)
                    del lines
                    on_rows(rows)
            finally:
                for future in pending:
                    future.cancel()
        coordinator.rollback()
    return rows


@contextmanager
def _raw_connection(params):
    """A psycopg2 connection with the default database's parameters (JIT setting included), closed
    on exit. Plain psycopg2, not a Django connection: the chunks' threads open and close their own."""
    raw = psycopg2.connect(**params)
    try:
        yield raw
    finally:
        raw.close()
