"""Issue 53 item 3: the tallies a corpus import leaves, and the fold after it, against a GROUP BY of
the same rows measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_tally_bench .venv/bin/python bench/import_tallies.py \\
        [--pairs 43300]

bench/import_corpus.py's MultiNLI-shaped files (its shape scaled to --pairs) are imported twice with
`import_pairs_file`, into two datasets: first with every chunk's deltas written as it goes (as
before issue 53: `tallies.deltas_gathered` replaced by a block that holds nothing), then as the
importer does now (the run's deltas netted per key, written before it commits). After each: the
word tally's rows and its size with its indexes (autovacuum off on the tallies, as on the machine
of the issue), then the fold's statements (`tallies._fold()`) timed against a GROUP BY of the same rows into a table
(`CREATE TEMP TABLE ... AS SELECT key, sum(n) ... GROUP BY key`), and the table's size after the
fold and a VACUUM. Loads data into the database it is pointed at: use one of its own.
"""

import argparse
import contextlib
import os
import secrets
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_tally_bench"


def sizes(cursor, table):
    cursor.execute("SELECT count(*), pg_relation_size(%s), pg_indexes_size(%s) FROM " + table, [table, table])
    rows, heap, indexes = cursor.fetchone()
    return f"{rows:>10,} rows, {heap / 2**20:7.1f} MB + {indexes / 2**20:7.1f} MB of indexes"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=43_300)
    args = parser.parse_args()
    from run import ensure_database  # bench/run.py

    ensure_database()
    import django

    django.setup()
    from django.db import connection
    from import_corpus import empty_corpus, write_files

    import importers.services as importing
    from corpus import signals, tallies
    from corpus.models import Dataset, WordTally

    empty_corpus()
    table = WordTally._meta.db_table
    key = ", ".join(tallies.column(WordTally, name) for name in tallies.WORD_KEY)
    tally_tables = [model._meta.db_table for model, _ in tallies.CORPUS.tables]
    with connection.cursor() as cursor:
        for name in tally_tables:
            cursor.execute(f"ALTER TABLE {name} SET (autovacuum_enabled = false)")
    gathered = tallies.deltas_gathered
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory(prefix="nli-bench-tallies-") as directory:
        paths = write_files(args.pairs, directory)
        for how, block in (
            ("each chunk's deltas (before)", contextlib.nullcontext),
            ("netted per key (now)", gathered),
        ):
            tallies.fold()
            with connection.cursor() as cursor:
                cursor.execute(f"VACUUM {table}")
            slug = "bench" if block is gathered else "bench-before"
            Dataset.objects.get_or_create(slug=slug, defaults={"name": slug})
            tallies.deltas_gathered = block  # type: ignore[assignment]  # the importer reads it from the module
            started = time.perf_counter()
            for split in ("dev", "test", "train"):
                importing.import_pairs_file(paths[split], slug, split=split)
            imported = time.perf_counter() - started
            tallies.deltas_gathered = gathered
            with connection.cursor() as cursor:
                print(f"\n{how}: import {imported:.1f} s ({args.pairs / imported:.0f} pairs/s)")
                print(f"  word tally after the import: {sizes(cursor, table)}")
                started = time.perf_counter()
                cursor.execute(f"CREATE TEMP TABLE grouped AS SELECT {key}, sum(n) AS n FROM {table} GROUP BY {key}")
                grouped = time.perf_counter() - started
                cursor.execute("DROP TABLE grouped")
            started = time.perf_counter()
            folded = tallies._fold()  # the fold's statements, without its receivers
            fold = time.perf_counter() - started
            started = time.perf_counter()
            signals.tallies_folded.send(sender=tallies.fold)  # what a fold sets off (listings)
            receivers = time.perf_counter() - started
            with connection.cursor() as cursor:
                print(f"  GROUP BY of the same rows into a table {grouped * 1000:8.0f} ms")
                print(f"  the fold's receivers (listings)        {receivers * 1000:8.0f} ms")
                print(
                    f"  fold ({folded:,} rows written)         {fold * 1000:8.0f} ms  {fold / grouped:5.2f}x the GROUP BY"
                )
                print(f"  word tally after the fold:   {sizes(cursor, table)}")
                cursor.execute(f"VACUUM {table}")
                print(f"  and after VACUUM:            {sizes(cursor, table)}")
    with connection.cursor() as cursor:
        for name in tally_tables:
            cursor.execute(f"ALTER TABLE {name} RESET (autovacuum_enabled)")


if __name__ == "__main__":
    main()
