"""The Pairs page at every filter and combination a researcher cleans with, on a MultiNLI-shaped
corpus with a crowd on it, cold and warm, against the login page measured in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_pairs_bench .venv/bin/python bench/pairs_filters.py \\
        [--pairs 433000] [--repeat 3] [--slow-ms 100] [--keep] [--only text,worker] [--fresh-too]

The corpus and crowd are bench/crowd_pages.py's (bench/run.py's COPY of MultiNLI's shape scaled to
--pairs, bench/worker_quality.py's workers, the writing and validation studies, catch trials,
bonuses and typing evidence), built through the site's own code. The build ends without ANALYZE
(autovacuum is off on the bench cluster), so the first measurement is with the statistics bench/run.py
took right after the COPY, before the crowd (stale); --fresh-too measures again after ANALYZE.

Printed per filter: the best of --repeat cold requests (figure cache emptied) and its ratio to
the login page's (measured first and last, the best of both), the best of --repeat warm requests (the cache as the cold one left it) as a
ratio, the statements of the cold request and its slowest statement, then EXPLAIN ANALYZE of every
statement slower than --slow-ms. Loads data into the database it is pointed at: use one of its own.
"""

import argparse
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DEBUG", "1")  # the statements' times (CaptureQueriesContext)
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_pairs_bench"


def build(pairs: int) -> None:
    """bench/crowd_pages.py's corpus and crowd, without the closing ANALYZE (stale statistics)."""
    from django.db import connection

    from bench.crowd_pages import add_crowd, add_studies, add_typing_evidence, realistic_seconds
    from bench.run import generate
    from bench.worker_quality import VALIDATORS, WRITERS, assign_workers
    from collection import hypothesis_tally
    from corpus import tallies, worker_tally
    from validation import cost_tally, credits

    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE collection_pair ALTER COLUMN held_places SET DEFAULT 0")
    seconds, labels = generate(pairs, VALIDATORS + WRITERS)
    assign_workers()
    realistic_seconds()
    claims = add_studies()
    workers = add_crowd(12)
    typing = add_typing_evidence()
    tallies.check_and_rebuild(None, hypothesis_tally.TALLY)
    tallies.check_and_rebuild(None, worker_tally.TALLY)
    credits.rebuild()
    cost_tally.rebuild_with_credits()
    print(f"corpus: {pairs} pairs, {labels} label rows, {claims} validation claims, {workers} workers, "
          f"{typing} typing-evidence rows; corpus built in {seconds:.1f} s, then the crowd")  # fmt: skip


def filters() -> list[tuple[str, dict[str, str]]]:
    """(name, query) of each filter and combination measured, named from the bench's own rows."""
    from django.db.models import Count

    from corpus.models import Genre, Pair, ValidationLabel, Worker

    def named(worker_pk: int) -> str:
        worker = Worker.objects.select_related("user").get(pk=worker_pk)
        return worker.external_id or worker.user.username

    busiest = (
        ValidationLabel.objects.filter(worker__isnull=False)
        .values("worker_id")
        .annotate(n=Count("pk"))
        .order_by("-n")
        .first()
    )
    writer = Pair.objects.filter(author__isnull=False).values_list("author_id", flat=True).first()
    genre = Genre.objects.order_by("pk").values_list("slug", flat=True).first() or ""
    small = Genre.objects.order_by("-pk").values_list("slug", flat=True).first() or ""
    worker = named(busiest["worker_id"]) if busiest else "nobody"
    return [
        ("text=the (common)", {"text": "the"}),
        ("text=w4242 (rare)", {"text": "w4242"}),
        ("text=zebra (none)", {"text": "zebra"}),
        ("text=the + genre", {"text": "the", "genre": genre}),
        ("one worker's pairs", {"worker": worker}),
        ("one writer's pairs", {"writer": named(writer) if writer else "nobody"}),
        ("worker + gold -", {"worker": worker, "gold": "-"}),
        ("study bench-writing", {"study": "bench-writing"}),
        ("flag=guesser", {"flag": "guesser"}),
        ("flag=typing", {"flag": "typing"}),
        ("flag=copy", {"flag": "copy"}),
        ("genre", {"genre": genre}),
        ("genre (small)", {"genre": small}),
        ("split=dev", {"split": "dev"}),
        ("gold -", {"gold": "-"}),
        ("gold entailment", {"gold": "entailment"}),
        ("genre + split + gold", {"genre": genre, "split": "dev", "gold": "entailment"}),
        ("genre + split + gold -", {"genre": small, "split": "dev", "gold": "-"}),
        *((f"pattern={name}", {"pattern": name}) for name in ("unanimous", "no_gold", "split_221", "gold_ne_author")),
        ("pattern=in_validation", {"pattern": "in_validation"}),
        ("genre + pattern=split_221", {"genre": genre, "pattern": "split_221"}),
    ]


def measure(pages: list[tuple[str, str, Any]], repeat: int, slow_ms: float) -> None:
    """Each page cold and warm against the login page, then EXPLAIN ANALYZE of its slow statements."""
    from django.core.cache import cache
    from django.db import connection, reset_queries
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    slow = []
    rows = []
    for name, url, logged_in in pages:
        browser = logged_in or Client()
        times, statements = [], []
        for _ in range(repeat):
            cache.clear()
            reset_queries()
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = browser.get(url)
                times.append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.status_code)
            statements = [(q["sql"], float(q["time"])) for q in captured.captured_queries]
        warm = []
        for _ in range(repeat):
            started = time.perf_counter()
            browser.get(url)
            warm.append(time.perf_counter() - started)
        slowest = max((seconds for _, seconds in statements), default=0.0)
        rows.append((name, min(times), min(warm), len(statements), slowest, logged_in is None))
        slow += [(name, sql, seconds) for sql, seconds in statements if seconds * 1000 > slow_ms]
    # The login page, measured first and last: the best of both is the baseline.
    baseline = min(row[1] for row in rows if row[5])
    print(f"{'page':<30} {'cold ms':>8} {'x login':>8} {'warm x':>7} {'stmts':>6} {'slowest ms':>10}")
    for name, best, warm_best, count, slowest, _ in rows:
        print(
            f"{name:<30} {best * 1000:8.1f} {best / baseline:8.1f} {warm_best / baseline:7.1f} "
            f"{count:6d} {slowest * 1000:10.1f}"
        )
    seen = set()
    for name, sql, seconds in slow:
        if sql in seen:
            continue
        seen.add(sql)
        print(f"\n--- {name}: {seconds * 1000:.0f} ms\n{sql[:800]}")
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
            print("\n".join(row[0] for row in cursor.fetchall()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--slow-ms", type=float, default=100.0)
    parser.add_argument("--keep", action="store_true", help="measure the corpus and crowd already there")
    parser.add_argument("--only", default="", help="measure only the filters whose name holds one of these (a,b)")
    parser.add_argument("--fresh-too", action="store_true", help="after measuring, ANALYZE and measure again")
    args = parser.parse_args()

    from bench.run import ensure_database

    ensure_database()
    import django

    django.setup()
    from urllib.parse import urlencode

    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    call_command("migrate", verbosity=0)
    if not args.keep:
        build(args.pairs)
    setup_test_environment()
    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(User.objects.create_superuser(f"bench-pairs-{time.time_ns()}", password="x"))
    chosen = filters()
    if args.only:
        chosen = [(name, query) for name, query in chosen if any(part in name for part in args.only.split(","))]
    pages: list[tuple[str, str, Any]] = [("login (baseline)", "/accounts/login/", None)]
    pages += [(name, f"/dashboard/pairs/?{urlencode(query)}", client) for name, query in chosen]
    pages.append(("login (again, last)", "/accounts/login/", None))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM collection_pair")
        print(f"{cursor.fetchone()[0]} pairs; statistics as the build left them (stale)")
    measure(pages, args.repeat, args.slow_ms)
    if args.fresh_too:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print("\nafter ANALYZE (fresh statistics):")
        measure(pages, args.repeat, args.slow_ms)


if __name__ == "__main__":
    main()
