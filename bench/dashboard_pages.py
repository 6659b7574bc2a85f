"""Every dashboard page, cold, against a static page measured in the same run (each
≤ 100x). Run by bench/run.py after its pages section, or alone on the corpus already there:

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_x .venv/bin/python bench/dashboard_pages.py [--repeat 3]

"Cold" is the figure cache emptied before each request (the aggregates really run); a server
process has imported matplotlib long before, so it is imported first. Also prints each page's
statement count, and how many pairs are tagged and were created in the last 48 hours (an import
leaves every pair there), so a reader sees what the pages had to read.
"""

import argparse
import contextlib
import os
import secrets
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

DATASET = "bench"
PAGES = [  # (name, path): every dashboard page a researcher opens (GET, no object id)
    ("collection", "/dashboard/"),
    ("validation", "/dashboard/validation/"),
    ("corpus", "/dashboard/corpus/"),
    ("workers", "/dashboard/workers/"),
    ("label pairs", "/dashboard/label/"),
    ("bonuses", "/dashboard/bonuses/"),
    ("pairs", "/dashboard/pairs/"),
    ("reports", "/dashboard/reports/"),
    ("snapshots", "/dashboard/snapshots/"),
    ("training", "/dashboard/training/"),
    ("artifacts", "/dashboard/artifacts/"),
    ("aggregation", "/dashboard/aggregation/"),
    ("mpe", "/dashboard/mpe/"),
    ("recast", "/dashboard/recast/"),
]
# The drawn figures, images of their own that the pages above point at (dashboard.charts): the
# browser asks for them after the page, so each is measured apart, cold (its numbers and its
# drawing both emptied from the cache).
FIGURES = [("hourly", "collection"), ("lengths", "corpus"), ("labels", "corpus")]


def _timed(function, repeat):
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - started)
    return min(seconds), statistics.median(seconds)


def measure(repeat=3):
    """[(name, best s, median s, statements)] with the static page first."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    from dashboard import plots

    with contextlib.suppress(RuntimeError):  # bench/run.py set it up already
        setup_test_environment()
    settings.ALLOWED_HOSTS = ["*"]
    plots._matplotlib()
    anonymous = Client()
    rows = [("static page (login form)", *_timed(lambda: anonymous.get("/accounts/login/"), repeat * 3), 0)]
    researcher = User.objects.create_superuser(f"bench-pages-{time.time_ns()}", password="x")
    client = Client()
    client.force_login(researcher)
    for name, path in PAGES:
        url = f"{path}?dataset={DATASET}"

        def page(url=url):
            cache.clear()
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        best, median = _timed(page, repeat)
        cache.clear()
        with CaptureQueriesContext(connection) as queries:
            page()
        rows.append((f"dashboard: {name}, cold", best, median, len(queries)))
    for name, page_name in FIGURES:
        url = f"/dashboard/figures/{name}.svg?dataset={DATASET}"

        def image(url=url):
            cache.clear()
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        best, median = _timed(image, repeat)
        cache.clear()
        with CaptureQueriesContext(connection) as queries:
            image()
        rows.append((f"figure: {name} ({page_name}'s image), cold", best, median, len(queries)))
    return rows


def explain(names, slowest=2):
    """{page: [(ms, statement, plan lines)]}: each named page's slowest statements, cold, with
    their EXPLAIN ANALYZE (PostgreSQL)."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(User.objects.create_superuser(f"bench-explain-{time.time_ns()}", password="x"))
    paths = dict(PAGES) | {f"figure {name}": f"/dashboard/figures/{name}.svg" for name, _ in FIGURES}
    plans: dict[str, list[tuple[float, str, list[str]]]] = {}
    for name in names:
        cache.clear()
        with CaptureQueriesContext(connection) as queries:
            client.get(f"{paths[name]}?dataset={DATASET}")
        timed = sorted(queries.captured_queries, key=lambda query: -float(query["time"]))[:slowest]
        plans[name] = []
        for query in timed:
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + query["sql"])
                lines = [row[0] for row in cursor.fetchall()]
            plans[name].append((1000 * float(query["time"]), query["sql"], lines))
    return plans


def corpus_state():
    from django.utils import timezone

    from artifacts.models import PairTags
    from corpus.models import Pair

    since = timezone.now() - timedelta(hours=48)
    return {
        "pairs": Pair.objects.count(),
        "tagged": PairTags.objects.count(),
        "created in the last 48 h": Pair.objects.filter(created_at__gte=since).count(),
    }


def section(table, args):
    """bench/run.py's rows: every page against the static page."""
    rows = measure(args.repeat)
    (name, base, base_median, _), pages = rows[0], rows[1:]
    table.baseline(name, base, base_median)
    for name, best, median, statements in pages:
        table.row(f"{name} ({statements} statements)", best, median, base)
    table.print(f"every dashboard page, cold: {corpus_state()}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--explain", nargs="+", metavar="PAGE", help="only EXPLAIN ANALYZE these pages' slowest statements"
    )
    args = parser.parse_args()
    if "bench" not in os.environ.get("DATABASE_URL", ""):
        sys.exit("point DATABASE_URL at a bench database (its name contains 'bench')")
    import django

    django.setup()
    if args.explain:
        from django.test.utils import setup_test_environment

        setup_test_environment()
        for name, plans in explain(args.explain).items():
            for ms, sql, lines in plans:
                print(f"== {name}: {ms:.1f} ms\n{sql}\n" + "\n".join(lines))
        return
    print(f"corpus: {corpus_state()}")
    rows = measure(args.repeat)
    base = rows[0][1]
    for name, best, median, statements in rows:
        print(
            f"  {name:<44} best {best * 1000:8.1f} ms  median {median * 1000:8.1f} ms  {best / base:7.1f}x  {statements} statements"
        )
    os.system("cat /proc/loadavg")


if __name__ == "__main__":
    main()
