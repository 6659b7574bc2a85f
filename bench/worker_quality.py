"""Benchmark: worker quality from SQL (quality/selectors.py) on a MultiNLI-sized corpus.

    .venv/bin/python bench/worker_quality.py                  # 433k pairs, database nli_qc_bench
    options: --pairs 43000  --repeat 3  --keep (leave the database; default: drop it)  --plan (print EXPLAIN ANALYZE)

The corpus is bench/run.py's (COPY): 433k pairs, 40k of them dev/test with five labels, so
~160k validation labels and 433k author labels. Here 800 validators get the validation labels
(with seconds per item) and 200 writers the pairs. Baseline, measured in the same run: a bare
`SELECT worker_id, count(*) ... GROUP BY worker_id` over the same validation labels. Every row
prints min and median over --repeat runs and the ratio of the median to the baseline's.
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
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DEBUG", "1")
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_qc_bench"

VALIDATORS, WRITERS = 800, 200


def assign_workers():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT min(id) FROM collection_worker")
        first = cursor.fetchone()[0]
        cursor.execute("UPDATE collection_pair SET author_id = %s + %s + (id %% %s)", [first, VALIDATORS, WRITERS])
        cursor.execute(
            "UPDATE validation_validationlabel l SET worker_id = p.author_id FROM collection_pair p "
            "WHERE p.id = l.pair_id AND l.position = 1"
        )
        # Four consecutive label ids per pair: id % 800 gives four different validators.
        cursor.execute(
            "UPDATE validation_validationlabel SET worker_id = %s + (id %% %s), seconds = 2 + (id * 7 %% 20) "
            "WHERE position > 1",
            [first, VALIDATORS],
        )
        cursor.execute("VACUUM ANALYZE")


def label_figures_in_django_aggregates(dataset=None):
    """Statement 1 written as Django aggregates (the first form): the CASE is repeated in each count."""
    from django.db.models import Count, F, Q

    from corpus.worker_tally import leave_one_out_gold
    from quality import selectors

    loo, others = leave_one_out_gold()
    rows = (
        selectors._validation_labels(dataset)
        .alias(**others)
        .alias(loo=loo)
        .values("worker_id")
        .annotate(
            n=Count("id"),
            timed=Count("id", filter=Q(seconds__isnull=False)),
            loo_items=Count("id", filter=~Q(loo="-")),
            loo_agreements=Count("id", filter=Q(loo=F("label"))),
            **{f"own_{label}": Count("id", filter=Q(label=label)) for label in selectors.LABELS},
            **{f"loo_own_{label}": Count("id", filter=Q(label=label) & ~Q(loo="-")) for label in selectors.LABELS},
            **{f"loo_gold_{label}": Count("id", filter=Q(loo=label)) for label in selectors.LABELS},
        )
        .order_by()
    )
    return {row["worker_id"]: row for row in rows}


def timed(function, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--plan", action="store_true")
    args = parser.parse_args()

    from bench.run import ensure_database, generate

    ensure_database()
    import django

    django.setup()
    from django.db import connection

    from corpus import tallies, worker_tally
    from corpus.worker_tally import leave_one_out_gold
    from quality import selectors

    print(f"load average before: {os.getloadavg()}")
    seconds, labels = generate(args.pairs, VALIDATORS + WRITERS)
    assign_workers()
    tallies.check_and_rebuild(None, worker_tally.TALLY)  # the labels' workers were set around the writers
    print(f"corpus: {args.pairs} pairs, {labels} label rows, built in {seconds:.1f} s")

    def baseline():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT worker_id, count(*) FROM validation_validationlabel "
                "WHERE worker_id IS NOT NULL AND position > 1 GROUP BY worker_id"
            )
            return cursor.fetchall()

    rows = [("baseline GROUP BY worker_id", baseline)]
    rows += [
        ("1 label figures (leave-one-out)", selectors.label_figures),
        ("1 same, as Django aggregates (before)", label_figures_in_django_aggregates),
        ("2 median seconds", selectors.median_seconds),
        ("3 catch-trial figures", selectors.catch_figures),
        ("4 writer figures", selectors.writer_figures),
        ("the same from the worker tally", worker_tally.worker_sums),
        ("worker_quality() with flags", selectors.worker_quality),
    ]
    base = None
    for name, function in rows:
        best, middle, result = timed(function, args.repeat)
        base = base or middle
        print(
            f"{name:36s} min {best * 1000:8.1f} ms  median {middle * 1000:8.1f} ms  x{middle / base:6.2f}  ({len(result)} rows)"
        )
    flagged = sum(1 for row in selectors.worker_quality() if row.flags)
    print(f"workers flagged: {flagged}")
    if args.plan:
        # The plan of statement 1, the one that reads every validation label.
        from django.db.models import Count, F, Q

        loo, others = leave_one_out_gold()
        queryset = (
            selectors._validation_labels()
            .alias(**others)
            .alias(loo=loo)
            .values("worker_id")
            .annotate(
                n=Count("id"), loo_items=Count("id", filter=~Q(loo="-")), agree=Count("id", filter=Q(loo=F("label")))
            )
            .order_by()
        )
        sql, params = queryset.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            print("\n".join(row[0] for row in cursor.fetchall()))
    print(f"load average after: {os.getloadavg()}")
    connection.close()
    if not args.keep:
        from urllib.parse import urlparse

        import psycopg2

        url = urlparse(os.environ["DATABASE_URL"])
        admin = psycopg2.connect(
            host=url.hostname, port=url.port or 5432, user=url.username or "postgres", dbname="postgres"
        )
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(f'DROP DATABASE "{url.path.lstrip("/")}"')
        admin.close()
        print("benchmark database dropped")


if __name__ == "__main__":
    main()
