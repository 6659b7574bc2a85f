"""Corpus imports at scale: what a bulk import leaves (tallies, statistics) and what the
claims and the fold then cost, each against a baseline measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_tally_bench .venv/bin/python bench/import_tallies.py \\
        [--pairs 433000] [--premises 20000] [--rounds 3] [--claims 150] [--concurrency 16] [--skip-claims]

Runs on the code of the checkout it lies in: to compare two versions, run it from a checkout of
each (the same file copied into the older one) on the same database.

1. bench/import_corpus.py's MultiNLI-shaped files (its shape scaled to --pairs) into dataset
   "bench", which asks for validation of 10% of its train pairs (MultiNLI validated about 9%):
   dev and test imported first, as the importer does (its ANALYZE at the end, where it has one);
   then train, and --premises premises for writing through the collection premise import, with
   the imports' own ANALYZE held back: the statistics are those of the corpus before the bulk import
   (autovacuum is off on this machine). The import's time, the tallies' rows and sizes
   (pg_total_relation_size, autovacuum off on every tally table).
2. Claims with those stale statistics: bench/claims_live.py's rounds (writing and validation claims
   as open claims pile up, each against a one-row FOR UPDATE at the same concurrency), then EXPLAIN
   ANALYZE of each claim's candidate statement for a fresh worker; the plan printed when over
   --slow-ms.
3. What the imports end with once they commit (timed: ef71907's ANALYZE of the pairs import's tables,
   now every import's VACUUM (ANALYZE) of the tables it changed), and step 2 again: fresh statistics.
4. The fold against a GROUP BY of the same rows into a table (`CREATE TEMP TABLE ... AS SELECT key,
   sum(n) ... GROUP BY key`), measured right before it: after the imports, and after a second train
   import of a quarter of --pairs into the same dataset (whose words meet the first import's keys).
   Each table's size after the fold (autovacuum off) and after a VACUUM.
5. The artifacts page's "rows newer than the listing" probe of the word tally, with another
   dataset's rows newer than bench's (EXPLAIN ANALYZE).

Loads data into the database it is pointed at: use one of its own.
"""

import argparse
import contextlib
import json
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

TRAIN_VALIDATION_FRACTION = 0.1


def sizes(cursor, table):
    cursor.execute(
        f"SELECT count(*), pg_relation_size(%s), pg_indexes_size(%s), pg_total_relation_size(%s) FROM {table}",
        [table, table, table],
    )
    rows, heap, indexes, total = cursor.fetchone()
    return (
        f"{rows:>10,} rows, {heap / 2**20:7.1f} MB + {indexes / 2**20:7.1f} MB of indexes"
        f" = {total / 2**20:7.1f} MB in all"
    )


def tally_tables():
    from corpus import tallies

    return [model._meta.db_table for maintained in tallies.MAINTAINED.values() for model, _ in maintained.tables]


def print_sizes(title):
    from django.db import connection

    print(f"  {title}:")
    with connection.cursor() as cursor:
        for table in dict.fromkeys(tally_tables()):
            print(f"    {table:<28} {sizes(cursor, table)}")


@contextlib.contextmanager
def analyze_held_back():
    """The imports' own ANALYZE (where the code has one) does nothing inside the block: the
    statistics stay those of before the import, as right after a bulk import."""
    import importlib

    patched = []
    for module_name, name in (
        ("importers.services", "analyze_filled_tables"),  # ef71907: the pairs import's
        ("corpus.bulk", "refresh"),  # every import's VACUUM (ANALYZE)
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if hasattr(module, name):
            patched.append((module, name, getattr(module, name)))
            setattr(module, name, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        for module, name, original in patched:
            setattr(module, name, original)


class _Notices:
    """psycopg2 keeps the last 50 notices of a connection in a list; this keeps them all."""

    def __init__(self):
        self.texts = []

    def append(self, text):
        self.texts.append(text)


@contextlib.contextmanager
def slow_statements(title, over_ms, shown=3, lines=30):
    """EXPLAIN ANALYZE, as it ran, of every statement of this connection over `over_ms` inside the
    block (auto_explain, its plans sent as notices): their count and time, and the slowest `shown`."""
    from django.db import connection

    connection.ensure_connection()
    raw = connection.connection
    notices, raw.notices = _Notices(), _Notices()
    settings = {
        "auto_explain.log_min_duration": str(int(over_ms)),
        "auto_explain.log_analyze": "on",
        "auto_explain.log_buffers": "on",
        "auto_explain.log_nested_statements": "on",
        "auto_explain.log_level": "notice",
    }
    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for name, value in settings.items():
            cursor.execute("SELECT set_config(%s, %s, false)", [name, value])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('auto_explain.log_min_duration', '-1', false)")
        notices = raw.notices
        raw.notices = []
    plans = []
    for text in notices.texts:
        if "duration:" in text:
            milliseconds = float(text.split("duration:")[1].split("ms")[0])
            plans.append((milliseconds, text.strip()))
    plans.sort(reverse=True)
    print(
        f"  statements over {over_ms:.0f} ms in {title}: {len(plans)}, {sum(ms for ms, _ in plans) / 1000:.1f} s in all"
    )
    for milliseconds, text in plans[:shown]:
        print(f"    -- {milliseconds:,.0f} ms:")
        body = text.splitlines()
        print("\n".join(f"      {line}" for line in body[:lines]))
        if len(body) > lines:
            print(f"      ... ({len(body) - lines} more lines)")


def write_premises(path, count, seed=53):
    """JSONL premises of English words (the premise import drops text that is mostly symbols)."""
    import random

    import wordfreq

    rng = random.Random(seed)
    words = wordfreq.top_n_list("en", 3000)
    with open(path, "w", encoding="utf-8") as handle:
        for n in range(count):
            text = " ".join(rng.choices(words, k=rng.randint(8, 30))).capitalize() + f" number {n}."
            handle.write(json.dumps({"text": text}) + "\n")
    return path


def explain(sql, params, slow_ms):
    """EXPLAIN ANALYZE of a statement (rolled back: the candidate locks are taken and let go)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        plan = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    total = next((float(line.split(":")[1].split()[0]) for line in plan if line.startswith("Execution Time")), 0.0)
    return total, plan


def claim_plans(slow_ms):
    """EXPLAIN ANALYZE of the writing and the validation claim's candidate statement, for a fresh
    worker, as the claims ask them (locked, the limit of a claim)."""
    from django.contrib.auth.models import User
    from django.utils import timezone

    from collection.writing_claims import candidate_statement as writing_candidates
    from corpus.models import Dataset, Worker
    from validation.selectors import candidate_statement as validation_candidates

    dataset = Dataset.objects.get(slug="bench")
    user = User.objects.create(username=f"plan-{time.time_ns()}")
    worker = Worker.objects.create(user=user)
    now = timezone.now()
    for kind, (sql, params) in (
        ("writing", writing_candidates(worker, now, dataset=dataset, wanted=1)),
        ("validation", validation_candidates(worker, now, dataset=dataset, limit=15, lock=True)),
    ):
        total, plan = explain(sql, params, slow_ms)
        print(f"    EXPLAIN ANALYZE {kind} candidates: {total:.1f} ms")
        if total > slow_ms:
            print("\n".join(f"      {line}" for line in plan))


def claims(args, title):
    import claims_live  # bench/, beside this file

    print(f"\n== claims, {title} ==")
    print("  before the first round:")
    claim_plans(args.slow_ms)
    claims_live.run(argparse.Namespace(rounds=args.rounds, claims=args.claims, concurrency=args.concurrency))
    print("  after the last round:")
    claim_plans(args.slow_ms)


@contextlib.contextmanager
def merges_timed():
    """Seconds of each `corpus.tallies._merge` inside the block (none where the code has no merge)."""
    from corpus.tallies import engine as tallies  # where `_merge` is called from, so patched there

    merge = getattr(tallies, "_merge", None)
    seconds: list[float] = []
    if merge is None:
        yield seconds
        return

    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return merge(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - started)

    tallies._merge = timed
    try:
        yield seconds
    finally:
        tallies._merge = merge


def fold_against_group_by(title, slow_ms):
    """The fold's statements (tallies._fold, without its receivers) against a GROUP BY of each
    table's rows into a table, measured right before it."""
    from django.db import connection

    from corpus import signals, tallies

    print(f"\n== the fold, {title} ==")
    print_sizes("before the fold")
    grouped = 0.0
    with connection.cursor() as cursor:
        for maintained in tallies.MAINTAINED.values():
            for model, key_names in maintained.tables:
                table = model._meta.db_table
                key = ", ".join(tallies.column(model, name) for name in key_names)
                started = time.perf_counter()
                cursor.execute(f"CREATE TEMP TABLE grouped AS SELECT {key}, sum(n) AS n FROM {table} GROUP BY {key}")
                grouped += time.perf_counter() - started
                cursor.execute("DROP TABLE grouped")
    started = time.perf_counter()
    with slow_statements("the fold", slow_ms, shown=len(tally_tables()), lines=60):
        result = tallies._fold()  # its statements, committed
    fold = time.perf_counter() - started
    folded, replaced = result if isinstance(result, tuple) else (result, None)  # ef71907: rows only
    started = time.perf_counter()
    signals.tallies_folded.send(sender=tallies.fold)  # what a fold sets off (the give-away listings)
    receivers = time.perf_counter() - started
    vacuum = 0.0
    if hasattr(tallies, "_vacuum"):  # the fold's own VACUUM of what it folded, where it has one
        started = time.perf_counter()
        tallies._vacuum(replaced)
        vacuum = time.perf_counter() - started
    print(f"  GROUP BY of every tally's rows into a table  {grouped * 1000:8.0f} ms")
    print(f"  fold ({folded:,} rows written)                {fold * 1000:8.0f} ms  {fold / grouped:5.2f}x the GROUP BY")
    print(f"  its VACUUM of the tables it folded          {vacuum * 1000:8.0f} ms")
    print(f"  the fold's receivers (listings)             {receivers * 1000:8.0f} ms")
    print_sizes("after the fold (autovacuum off; the fold's VACUUM where it has one)")
    with connection.cursor() as cursor:
        for table in dict.fromkeys(tally_tables()):
            cursor.execute(f"VACUUM {table}")
    print_sizes("after a VACUUM")


def newer_probe(paths, slow_ms):
    """The listing's probe (artifacts.listings, as the code at hand asks it): has bench a word tally
    row newer than its kept listing? Asked with another dataset's rows newer than all of bench's."""
    from django.db import connection
    from django.db.models import Max
    from django.test.utils import CaptureQueriesContext

    import importers.services as importing
    from artifacts import listings
    from corpus.models import Dataset, WordTally

    Dataset.objects.filter(slug="bench-other").delete()
    importing.import_pairs_file(paths["dev"], "bench-other", split="dev")
    bench = Dataset.objects.get(slug="bench")
    mark = WordTally.objects.filter(dataset=bench).aggregate(highest=Max("pk"))["highest"] or 0
    newer = WordTally.objects.filter(pk__gt=mark).count()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {WordTally._meta.db_table}")
    with CaptureQueriesContext(connection) as asked:
        assert not listings._changed_since(bench, mark)
    print(f"\n== the word tally's 'newer than the listing' probe ({newer:,} newer rows of another dataset) ==")
    for query in asked.captured_queries:
        total, plan = explain(query["sql"], None, slow_ms)
        print(f"  {query['sql']}")
        print(f"  EXPLAIN ANALYZE {total:.2f} ms")
        print("\n".join(f"    {line}" for line in plan))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=43_300)
    parser.add_argument("--premises", type=int, default=20_000, help="premises for writing (collection import)")
    parser.add_argument("--rounds", type=int, default=3, help="claims_live.py: rounds")
    parser.add_argument("--claims", type=int, default=150, help="claims_live.py: claims a round")
    parser.add_argument("--concurrency", type=int, default=16, help="claims_live.py: threads")
    parser.add_argument("--slow-ms", type=float, default=100.0, help="print the plan of a statement over this")
    parser.add_argument("--skip-claims", action="store_true")
    parser.add_argument(
        "--gathered-keys",
        type=int,
        help="corpus.tallies.GATHERED_KEYS_WRITTEN_AT for the run: the keys an import holds in memory before"
        " it writes (or stages) them; lower than the corpus's keys, as a larger vocabulary would be",
    )
    args = parser.parse_args()
    from run import ensure_database  # bench/run.py

    ensure_database()
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from import_corpus import empty_corpus, write_files

    import importers.services as importing
    from collection.premise_import import import_premises
    from corpus.models import Dataset, Genre

    settings.CONN_MAX_AGE = 0
    if args.gathered_keys:
        from corpus.tallies import engine

        engine.GATHERED_KEYS_WRITTEN_AT = args.gathered_keys
    empty_corpus()
    Dataset.objects.filter(slug__in=["bench", "bench-other"]).delete()
    with connection.cursor() as cursor:
        for name in dict.fromkeys(tally_tables()):
            # Emptied for good (an earlier run's deleted rows would count in the sizes).
            cursor.execute(f"TRUNCATE {name}")
            cursor.execute(f"ALTER TABLE {name} SET (autovacuum_enabled = false)")
    Dataset.objects.create(
        slug="bench", name="bench", is_imported=True, train_validation_fraction=TRAIN_VALIDATION_FRACTION
    )
    print(f"load average before: {os.getloadavg()}; code at {REPO}; options {vars(args)}")
    with tempfile.TemporaryDirectory(prefix="nli-bench-tallies-") as directory:
        paths = write_files(args.pairs, directory)
        started = time.perf_counter()
        for split in ("dev", "test"):
            importing.import_pairs_file(paths[split], "bench", split=split)
        with analyze_held_back():
            importing.import_pairs_file(paths["train"], "bench", split="train")
            imported = time.perf_counter() - started
            premises = write_premises(Path(directory) / "premises.jsonl", args.premises)
            started = time.perf_counter()
            genre = Genre.objects.get(slug="fiction")
            import_premises([premises], genre, "bench", split="train", file_format="jsonl")
            premise_seconds = time.perf_counter() - started
        print(f"\n== the import of {args.pairs:,} pairs (dev, test, then train) ==")
        print(f"  import {imported:.1f} s ({args.pairs / imported:.0f} pairs/s), its ANALYZE held back for train")
        print(f"  premise import of {args.premises:,} premises {premise_seconds:.1f} s, its ANALYZE held back")
        print_sizes("the tallies after the import (autovacuum off)")
        if not args.skip_claims:
            claims(args, "statistics of before the bulk import (stale)")
        started = time.perf_counter()
        tables = importing.filled_tables()
        try:  # what the imports' own refresh does once they commit, where the code has one
            from corpus import bulk

            bulk.refresh(tables)
            done = "VACUUM (ANALYZE) of the tables they changed"
        except ImportError:  # ef71907: the pairs import's ANALYZE (the premise import had none)
            with connection.cursor() as cursor:
                cursor.execute(f"ANALYZE {', '.join(tables)}")
            done = "ANALYZE of the tables the pairs import filled"
        print(f"\n  the imports' {done}: {time.perf_counter() - started:.1f} s")
        if not args.skip_claims:
            claims(args, "after ANALYZE (fresh)")
        fold_against_group_by("after the imports", args.slow_ms)
        second = Path(directory) / "second"
        second.mkdir()
        # Its train file holds about a quarter of --pairs; the vocabulary is the first import's.
        extra = write_files(args.pairs // 4 + round(40_000 * args.pairs / 433_000), second, seed=2019)
        started = time.perf_counter()
        # pairIDs of the second file repeat the first's: a suffix keeps them new.
        renamed = second / "bench2_train.jsonl"
        with open(extra["train"], encoding="utf-8") as source, open(renamed, "w", encoding="utf-8") as target:
            for line in source:
                record = json.loads(line)
                record["pairID"] += "-2"
                record["promptID"] += "-2"
                target.write(json.dumps(record) + "\n")
        with merges_timed() as merged:
            importing.import_pairs_file(renamed, "bench", split="train")
        print(f"\n  a second train import into bench: {time.perf_counter() - started:.1f} s")
        if merged:  # imports that add their sums to the rows their keys have (corpus.tallies._merge)
            print(
                f"    of which its sums added to the tallies' rows: {sum(merged) * 1000:,.0f} ms ({len(merged)} tables)"
            )
        fold_against_group_by("after a second train import into the same dataset", args.slow_ms)
        newer_probe(paths, args.slow_ms)
    with connection.cursor() as cursor:
        for name in dict.fromkeys(tally_tables()):
            cursor.execute(f"ALTER TABLE {name} RESET (autovacuum_enabled)")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
