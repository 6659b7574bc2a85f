"""The validation claim's candidate query with the linked ids left out (`crowd.WorkerLink`),
at MultiNLI scale, with fresh and with stale statistics.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_links \\
        nice -n 10 .venv/bin/python bench/linked_candidates.py [--pairs 433000] [--keep] [--rounds 30]

On bench/run.py's MultiNLI-shaped corpus (433k pairs, 20k queued for validation), every pair is
given an author among `--writers` writers (MultiNLI's pairs all have one), each worker a study
session and a browser (`crowd.DeviceSighting`), and `--links` link rows (`crowd.WorkerLink`, both
ways) among them; the validator is linked to three writers, whose pairs must never be offered.

Two cases, each printed as EXPLAIN (ANALYZE, BUFFERS) of the statement a claim runs
(`validation.selectors.candidate_statement`, LIMIT 15, FOR UPDATE SKIP LOCKED, rolled back) and the
median wall time of `--rounds` runs, with the same statement without the link condition beside it
(the ratio is against it, measured in the same run):
  fresh   ANALYZE after the links were written;
  stale   the link, sighting and session tables analysed while they held no links, autovacuum off
          for them, then `--late-links` link rows and as many sessions inserted: the planner
          believes the tables empty;
  grown   the same rows analysed again (what autovacuum's ANALYZE would give).
"""

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_bench_links"

from bench.run import ensure_database, generate  # noqa: E402

LINK_CLAUSE = (
    "NOT (collection_pair.author_id IN (SELECT k.linked_id FROM crowd_workerlink k WHERE k.worker_id = %s)"
    " AND collection_pair.author_id IS NOT NULL)"
)
# The same statement without the link condition: the parameter is kept, so the others keep their places.
WITHOUT_LINKS = "(%s::bigint IS NOT NULL)"
LINKED_TABLES = ("crowd_workerlink", "crowd_devicesighting", "collection_studysession")


def populate(writers, links, rng_seed=50):
    """Authors for every pair, a session and a browser per worker, `links` link rows; returns the
    validator and the writers it is linked to."""
    import random

    from django.db import connection

    from corpus.models import Dataset, Worker
    from crowd.models import DeviceSighting, MarketCheck, Study, StudySession, TaskKind

    rng = random.Random(rng_seed)
    workers = list(Worker.objects.order_by("pk").values_list("pk", flat=True))
    authors, others = workers[:writers], workers[writers:]
    validator = others[0]
    dataset = Dataset.objects.get(slug="bench")
    study, _ = Study.objects.get_or_create(
        slug="bench-links",
        defaults={"name": "links", "dataset": dataset, "task_kind": TaskKind.VALIDATION, "completion_code": "C"},
    )
    with connection.cursor() as cursor:
        for table in LINKED_TABLES:
            cursor.execute(f"DELETE FROM {table}")
        cursor.execute("SELECT count(*) FROM collection_pair WHERE author_id IS NULL")
        if cursor.fetchone()[0]:
            cursor.execute(
                "UPDATE collection_pair SET author_id = (%s::bigint[])[1 + (id %% %s)]",
                [authors, len(authors)],
            )
            cursor.execute("VACUUM ANALYZE collection_pair")
    StudySession.objects.bulk_create(
        StudySession(
            study=study,
            worker_id=w,
            external_study_id="s",
            external_session_id=f"S{w}",
            device=f"dev{w}",
            market_check=MarketCheck.VOUCHED,
        )
        for w in workers
    )
    DeviceSighting.objects.bulk_create(DeviceSighting(device=f"dev{w}", worker_id=w) for w in workers)
    with connection.cursor() as cursor:
        linked_writers = rng.sample(authors, 3)
        rows = [(validator, writer) for writer in linked_writers]
        while len(rows) < links // 2:
            one, other = rng.sample(workers, 2)
            rows.append((one, other))
        insert_links(cursor, rows)
    return validator, linked_writers


def insert_links(cursor, rows):
    """Both directions of each (one, other), as crowd.arrival.link_workers writes them."""
    ones = [one for one, other in rows] + [other for one, other in rows]
    others = [other for one, other in rows] + [one for one, other in rows]
    cursor.execute(
        "INSERT INTO crowd_workerlink (worker_id, linked_id, reason, created_at)"
        " SELECT a, b, 'market', now() FROM unnest(%s::bigint[], %s::bigint[]) AS t(a, b)"
        " ON CONFLICT DO NOTHING",
        [ones, others],
    )


def statements(validator):
    from django.utils import timezone

    from corpus.models import Worker
    from validation.selectors import candidate_statement

    worker = Worker.objects.get(pk=validator)
    sql, params = candidate_statement(worker, timezone.now(), limit=15, lock=True)
    assert LINK_CLAUSE in sql, "the candidate statement no longer has the link clause this bench replaces"
    return {"with links": (sql, params), "without links": (sql.replace(LINK_CLAUSE, WITHOUT_LINKS), params)}


def measure(name, validator, linked_writers, rounds):
    from django.db import connection, transaction

    print(f"\n== {name} ==")
    for table in LINKED_TABLES:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples::bigint, (SELECT count(*) FROM " + table + ") FROM pg_class WHERE relname = %s",
                [table],
            )
            believed, actual = cursor.fetchone()
        print(f"{table}: planner believes {believed:,} rows, holds {actual:,}")
    timings = {}
    for label, (sql, params) in statements(validator).items():
        runs = []
        for _ in range(rounds + 1):
            with transaction.atomic(), connection.cursor() as cursor:
                started = time.perf_counter()
                cursor.execute(sql, params)
                rows = cursor.fetchall()
                runs.append((time.perf_counter() - started) * 1000)
                transaction.set_rollback(True)
        timings[label] = statistics.median(runs[1:])  # the first warms the cache
        if label == "with links":
            offered = [pk for pk, *_ in rows]
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM collection_pair WHERE id = ANY(%s) AND author_id = ANY(%s)",
                    [offered, linked_writers],
                )
                assert cursor.fetchone()[0] == 0, "a linked writer's pair was offered"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plan = [line for (line,) in cursor.fetchall()]
            transaction.set_rollback(True)
        print(f"-- {label}: median {timings[label]:.2f} ms over {rounds} runs")
        for line in plan:
            print("   " + line)
    print(f"ratio with/without links: {timings['with links'] / timings['without links']:.2f}")
    return timings


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--writers", type=int, default=300)
    parser.add_argument("--workers", type=int, default=600)
    parser.add_argument("--links", type=int, default=400)
    parser.add_argument("--late-links", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="reuse the corpus already generated")
    args = parser.parse_args()
    ensure_database()
    import django

    django.setup()
    from django.db import connection

    if not args.keep:
        seconds, labels = generate(args.pairs, args.workers)
        print(f"generated {args.pairs:,} pairs and {labels:,} labels in {seconds:.1f} s")
    validator, linked_writers = populate(args.writers, args.links)
    with connection.cursor() as cursor:
        for table in LINKED_TABLES:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = true)")
        cursor.execute("ANALYZE")
    print(f"load average {os.getloadavg()[0]:.2f}")
    measure("fresh statistics", validator, linked_writers, args.rounds)

    # Stale: the tables analysed while they held no links and no sessions, then written to with
    # autovacuum off, so the planner still believes them (nearly) empty.
    import random

    from corpus.models import Worker

    with connection.cursor() as cursor:
        for table in LINKED_TABLES:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        for table in LINKED_TABLES:
            cursor.execute(f"DELETE FROM {table}")
        for table in LINKED_TABLES:
            cursor.execute(f"ANALYZE {table}")
    validator, linked_writers = populate(args.writers, args.links)
    rng = random.Random(51)
    workers = list(Worker.objects.order_by("pk").values_list("pk", flat=True))
    with connection.cursor() as cursor:
        rows: set[tuple[int, int]] = set()
        while len(rows) < args.late_links // 2:
            one, other = rng.sample(workers, 2)
            rows.add((one, other))
        insert_links(cursor, sorted(rows))
    print(f"load average {os.getloadavg()[0]:.2f}")
    measure(
        "stale statistics (analysed empty, rows inserted after, autovacuum off)", validator, linked_writers, args.rounds
    )
    # The same rows, analysed: the plan a grown link table gets once autovacuum has seen it.
    with connection.cursor() as cursor:
        for table in LINKED_TABLES:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = true)")
            cursor.execute(f"ANALYZE {table}")
    measure(f"fresh statistics, {args.late_links:,} more links", validator, linked_writers, args.rounds)


if __name__ == "__main__":
    main()
