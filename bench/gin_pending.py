"""The copy check under a writing crowd, by its index's pending list and by the index it reads.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/gin_pending.py \\
        [--sentences 430000] [--submits 3000] [--limits 4096,64,0] [--lookups bands,trigram]

A GIN index takes new rows into a pending list (`fastupdate`), which every lookup reads whole and
which the insert that fills it past `gin_pending_list_limit` (4 MB by default) merges into the index.
The written sentences are looked up (the copy check) as often as they are written, so both costs
fall on the writing submit. For each lookup and each limit, in a throwaway database:

1. A table of the written sentences' shape (`normalised`, `premise_id`) holding --sentences real-like
   sentences: SNLI dev's hypotheses (../shared/data), each with one or two words swapped for other
   words of SNLI dev, the lookup's index built after the load (no pending list), then VACUUM ANALYZE.
   The lookups: `bands`, the copy check's own (`authorship.copies.nearest_sql` inside
   `copies.band_lookup`, on the GIN index of `copy_bands`), and `trigram`, the statement it replaced
   (`%` on a trigram GIN index, the threshold set for the transaction: TRIGRAM_LOOKUP below).
2. --submits writing submits, one after the other, each in one transaction as the submit runs them:
   the copy check's lookup of three new sentences and the insert of the three. Each submit is timed,
   and the pending list's size is read every 100 submits.

Prints, per lookup and limit, the submits' median, p99, worst and mean (ms), the lookups' and inserts' share, and
the pending list's largest size in pages. The same sentences and the same order for every limit.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
TABLE = "bench_written"
INDEX = "bench_written_lookup"
# The copy check's statement before the band index: each key a lookup of the trigram index by `%`.
TRIGRAM_LOOKUP = (
    "SELECT k.position, near.* FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS k(key, premise_id, position)"
    " CROSS JOIN LATERAL (SELECT w.id, w.worker_id, COALESCE(w.cluster_root_id, w.id),"
    f" similarity(w.normalised, k.key) AS alike FROM {TABLE} w"
    " WHERE w.normalised %% k.key AND w.premise_id <> k.premise_id"
    " AND NOT (w.worker_id = %s AND w.study_session_id = %s) ORDER BY alike DESC, w.id LIMIT 1) near"
)
DATABASE = "nli_gin_pending_bench"


def ready() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("DEBUG", "1")
    url = urlparse(os.environ["DATABASE_URL"])
    os.environ["DATABASE_URL"] = urlunparse(url._replace(path=f"/{DATABASE}"))
    import psycopg2

    admin = psycopg2.connect(urlunparse(url))
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        cursor.execute(f"CREATE DATABASE {DATABASE}")
    admin.close()
    import django

    django.setup()


def snli_hypotheses() -> list[str]:
    return [json.loads(line)["sentence2"] for line in (DATA / "snli_1.0_dev.jsonl").open()]


def varied(hypotheses: list[str], count: int, rng: random.Random) -> list[str]:
    """`count` sentences: SNLI dev's, each with one or two words swapped for another of SNLI dev's."""
    from authorship.copies import copy_key

    keys = [copy_key(text) for text in hypotheses]
    vocabulary = sorted({word for key in keys for word in key.split()})
    sentences = []
    for number in range(count):
        words = keys[number % len(keys)].split()
        for _ in range(rng.choice((1, 2))):
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
        sentences.append(" ".join(words))
    return sentences


def create_copy_bands() -> None:
    """The copy check's `copy_bands` function, as its migration creates it."""
    import importlib

    from django.db import connection

    migration = importlib.import_module("authorship.migrations.0014_written_sentence_copy_bands")
    with connection.schema_editor() as schema_editor:
        migration.create_copy_bands(None, schema_editor)


def build(cursor, sentences: list[str], limit_kb: int, lookup: str) -> None:
    import io

    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    cursor.execute(f"DROP TABLE IF EXISTS {TABLE}")
    cursor.execute(
        f"CREATE TABLE {TABLE} (id bigserial PRIMARY KEY, premise_id bigint NOT NULL,"
        " worker_id bigint NOT NULL, study_session_id bigint, cluster_root_id bigint, normalised varchar(300) NOT NULL)"
    )
    rows = io.StringIO("".join(f"{number // 3}\t{number // 9}\t{text}\n" for number, text in enumerate(sentences)))
    cursor.copy_from(rows, TABLE, columns=("premise_id", "worker_id", "normalised"))
    storage = "fastupdate = off" if limit_kb == 0 else f"gin_pending_list_limit = {limit_kb}"
    indexed = "(copy_bands(normalised))" if lookup == "bands" else "normalised gin_trgm_ops"
    cursor.execute(f"CREATE INDEX {INDEX} ON {TABLE} USING gin ({indexed}) WITH ({storage})")
    cursor.execute(f"ALTER TABLE {TABLE} SET (autovacuum_enabled = false)")


def pending_pages(cursor) -> int:
    cursor.execute(f"SELECT pending_pages FROM pgstatginindex('{INDEX}')")
    return int(cursor.fetchone()[0])


@contextmanager
def trigram_lookup(cursor: Any) -> Iterator[None]:
    """The threshold of `%` and sequential scans off, for the transaction."""
    from authorship.copies import COPY_SIMILARITY

    cursor.execute(
        "SELECT set_config('pg_trgm.similarity_threshold', %s, true), set_config('enable_seqscan', 'off', true)",
        [str(COPY_SIMILARITY)],
    )
    yield


def run(lookup: str, limit_kb: int, base: list[str], writes: list[str], first_premise: int) -> dict[str, float]:
    from django.db import connection, transaction

    from authorship.copies import COPY_SIMILARITY, band_lookup, nearest_sql

    create_copy_bands()
    with connection.cursor() as cursor:
        build(cursor, base, limit_kb, lookup)
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {TABLE}")
    if lookup == "bands":
        lookup_sql, around, threshold = (
            nearest_sql(TABLE, "NOT (w.worker_id = %s AND w.study_session_id = %s)"),
            band_lookup,
            [COPY_SIMILARITY],
        )
    else:
        lookup_sql, around, threshold = TRIGRAM_LOOKUP, trigram_lookup, []
    insert_sql = f"INSERT INTO {TABLE} (premise_id, worker_id, study_session_id, normalised) VALUES (%s, %s, %s, %s)"
    submits, lookups, inserts, largest = [], [], [], 0
    for number in range(0, len(writes) - 2, 3):
        keys = writes[number : number + 3]
        premise = first_premise + number // 3
        worker = 1_000_000 + number // 9
        started = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            with around(cursor):
                cursor.execute(lookup_sql, [keys, [premise] * 3, *threshold, worker, worker])
                cursor.fetchall()
            looked = time.perf_counter()
            for key in keys:
                cursor.execute(insert_sql, [premise, worker, worker, key])
        ended = time.perf_counter()
        submits.append((ended - started) * 1000)
        lookups.append((looked - started) * 1000)
        inserts.append((ended - looked) * 1000)
        if (number // 3) % 100 == 0:
            with connection.cursor() as cursor:
                largest = max(largest, pending_pages(cursor))
    submits.sort()
    return {
        "median": statistics.median(submits),
        "p99": submits[int(0.99 * (len(submits) - 1))],
        "worst": submits[-1],
        "mean": statistics.fmean(submits),
        "lookup_mean": statistics.fmean(lookups),
        "insert_mean": statistics.fmean(inserts),
        "insert_worst": max(inserts),
        "pending_pages": largest,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=430_000)
    parser.add_argument("--submits", type=int, default=3_000)
    parser.add_argument(
        "--limits", default="4096,64,0", help="gin_pending_list_limit values (kB), in turn; 0: fastupdate off"
    )
    parser.add_argument("--lookups", default="bands,trigram", help="the copy check's lookups, in turn")
    args = parser.parse_args()
    ready()
    rng = random.Random(7)
    hypotheses = snli_hypotheses()
    base = varied(hypotheses, args.sentences, rng)
    writes = varied(list(reversed(hypotheses)), 3 * args.submits, rng)
    print(f"{args.sentences} sentences, {args.submits} submits of three, one after the other")
    print(
        f"{'lookup':>7} {'limit kB':>8} {'median':>7} {'p99':>7} {'worst':>7} {'mean':>6} {'lookup':>7} {'insert':>7} {'ins worst':>9} {'pending pages':>13}"
    )
    runs = [(lookup, int(limit)) for lookup in args.lookups.split(",") for limit in args.limits.split(",")]
    for lookup, limit in runs:
        figures = run(lookup, limit, base, writes, args.sentences)
        print(
            f"{lookup:>7} {limit:>8} {figures['median']:>7.2f} {figures['p99']:>7.2f} {figures['worst']:>7.1f} {figures['mean']:>6.2f}"
            f" {figures['lookup_mean']:>7.2f} {figures['insert_mean']:>7.2f} {figures['insert_worst']:>9.1f}"
            f" {figures['pending_pages']:>13}"
        )
    from django.db import connection

    connection.close()


if __name__ == "__main__":
    main()
