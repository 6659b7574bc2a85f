"""Benchmark: the cost page (dashboard/queries/costs.py) on a MultiNLI-sized corpus.

    .venv/bin/python bench/costs_page.py          # 433k pairs, database nli_costs_bench
    options: --pairs 100000  --repeat 3  --keep (leave the database)  --plan (EXPLAIN ANALYZE each statement)

The corpus is bench/run.py's (COPY) with bench/worker_quality.py's workers: 40k dev/test pairs
with five labels (~160k validation labels), 20k queued train pairs. Here every validation label
becomes a submitted claim of its validator's session in one validation study (a task per five
labels), every written premise a submitted writing claim of its writer's session in a writing
study, and a third of the five-label pairs are marked stopped early at three labels (counters
only: the page reads counters). Baseline, in the same run: a bare count of the submitted claims
by study. Prints min and median over --repeat runs of cost_overview() and of the page, cold.
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
os.environ.setdefault("DEBUG", "1")
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_costs_bench"


def add_studies():
    """The two studies, their sessions and claims, in set-based SQL; returns (claims, writing claims)."""
    from django.db import connection

    from corpus.models import Dataset
    from crowd.models import Study, TaskKind

    dataset = Dataset.objects.get(slug="bench")
    Study.objects.filter(slug__in=["bench-writing", "bench-validation"]).delete()  # a --keep run before
    writing = Study.objects.create(
        slug="bench-writing", name="Bench writing", dataset=dataset, task_kind=TaskKind.WRITING,
        completion_code="W", payment_per_task="1.20", bonus_currency="GBP",
    )  # fmt: skip
    validation = Study.objects.create(
        slug="bench-validation", name="Bench validation", dataset=dataset, task_kind=TaskKind.VALIDATION,
        completion_code="V", payment_per_task="0.50", bonus_currency="GBP",
    )  # fmt: skip
    with connection.cursor() as cursor:
        for study, source in (
            (validation, "SELECT DISTINCT worker_id FROM validation_validationlabel WHERE position > 1"),
            (writing, "SELECT DISTINCT author_id FROM collection_pair WHERE author_id IS NOT NULL"),
        ):
            cursor.execute(
                "INSERT INTO collection_studysession (study_id, worker_id, external_study_id, external_session_id, "
                "tasks_done, started_at, completion_code, code_held_reason, turk_submit_to) "
                f"SELECT %s, w, '', 'bench-' || w, 0, now(), '', '', '' FROM ({source}) AS workers (w)",
                [study.pk],
            )
        cursor.execute(
            "INSERT INTO validation_validationclaim (batch, worker_id, pair_id, is_catch_trial, study_session_id, "
            "status, created_at, expires_at, submitted_at) "
            "SELECT gen_random_uuid(), l.worker_id, l.pair_id, false, s.id, 'submitted', now(), now(), now() "
            "FROM validation_validationlabel l JOIN collection_studysession s "
            "ON s.worker_id = l.worker_id AND s.study_id = %s WHERE l.position > 1",
            [validation.pk],
        )
        claims = cursor.rowcount
        cursor.execute(
            "INSERT INTO collection_writingclaim (token, worker_id, premise_id, study_session_id, status, "
            "created_at, expires_at, submitted_at) "
            "SELECT gen_random_uuid(), w.author_id, w.premise_id, s.id, 'submitted', now(), now(), now() "
            "FROM (SELECT DISTINCT author_id, premise_id FROM collection_pair WHERE author_id IS NOT NULL) w "
            "JOIN collection_studysession s ON s.worker_id = w.author_id AND s.study_id = %s",
            [writing.pk],
        )
        written = cursor.rowcount
        cursor.execute(
            "UPDATE collection_studysession s SET tasks_done = c.tasks FROM (SELECT study_session_id, "
            "ceil(count(*) / 5.0) AS tasks FROM validation_validationclaim GROUP BY study_session_id) c "
            "WHERE c.study_session_id = s.id"
        )
        cursor.execute(
            "UPDATE collection_studysession s SET tasks_done = c.tasks FROM (SELECT study_session_id, "
            "count(*) AS tasks FROM collection_writingclaim GROUP BY study_session_id) c WHERE c.study_session_id = s.id"
        )
        cursor.execute(
            "UPDATE collection_pair SET stopped_early = true, label_count = 3, stopping_rule = 'decided' "
            "WHERE label_count = 5 AND id % 3 = 0"
        )
        cursor.execute("VACUUM ANALYZE")
    return claims, written


def timed(function, repeat):
    seconds, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = function()
        seconds.append(time.perf_counter() - started)
    return min(seconds), statistics.median(seconds), result


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
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    from bench.worker_quality import VALIDATORS, WRITERS, assign_workers
    from corpus.scope import Scope
    from dashboard.queries.costs import _outcome_rows, cost_overview

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        # bench/run.py's COPY names no held_places (added later, without a database default).
        cursor.execute("ALTER TABLE collection_pair ALTER COLUMN held_places SET DEFAULT 0")
    print(f"load average before: {os.getloadavg()}")
    seconds, labels = generate(args.pairs, VALIDATORS + WRITERS)
    assign_workers()
    claims, written = add_studies()
    from collection import hypothesis_tally
    from corpus import tallies

    tallies.check_and_rebuild(
        None, hypothesis_tally.TALLY
    )  # the claims above went around the writing submit, which keeps the count
    from validation import cost_tally, credits

    # And the validation claims around the validation submit, which flags the credited claim and keeps
    # the cost page's validation tallies.
    cost_tally.rebuild_with_credits()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE validation_validationclaim")  # the flags set after add_studies' VACUUM ANALYZE
    print(f"corpus: {args.pairs} pairs, {labels} label rows, {claims} validation claims, {written} writing claims; "
          f"built in {seconds:.1f} s + studies")  # fmt: skip

    def baseline():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT s.study_id, count(*) FROM validation_validationclaim c JOIN collection_studysession s "
                "ON s.id = c.study_session_id WHERE c.status = 'submitted' GROUP BY s.study_id"
            )
            return cursor.fetchall()

    setup_test_environment()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["*"]
    client = Client()
    client.force_login(User.objects.create_superuser(f"bench-costs-{time.time_ns()}", password="x"))

    def page():
        cache.clear()
        response = client.get("/dashboard/costs/")
        assert response.status_code == 200
        return response

    def cold_overview():
        cache.clear()
        return cost_overview()

    def warm_page():
        # The figure cache holds the grouped counts (costs-rows): studies and bonuses are read afresh.
        response = client.get("/dashboard/costs/")
        assert response.status_code == 200
        return response

    base_best, base_median, _ = timed(baseline, args.repeat)
    print(f"  {'baseline: claims by study':<36} best {base_best * 1000:8.1f} ms  median {base_median * 1000:8.1f} ms")
    for name, function in (
        ("hypotheses: the join (before)", hypothesis_tally.fresh_counts),
        ("hypotheses: the maintained count", hypothesis_tally.counts),
        ("credit: subquery per pair (before)", lambda: list(credits.fresh_credited_ids())),
        ("outcomes: from the credited claims", lambda: _outcome_rows(Scope.everything())),
        ("cost_overview(), cold", cold_overview),
        ("the page, cold", page),
        ("the page, warm", warm_page),
    ):
        best, median, _ = timed(function, args.repeat)
        print(f"  {name:<36} best {best * 1000:8.1f} ms  median {median * 1000:8.1f} ms  {median / base_median:6.1f}x")
    overview = cost_overview()
    print(f"  figures: spent {overview['totals']['spent']}, gold {overview['totals']['gold']}, saved "
          f"{overview['totals']['saved']}, per gold {overview['totals']['cost_per_gold']}, projection "
          f"{overview['projection']['remaining_pairs']} pairs -> {overview['projection']['cost']}")  # fmt: skip
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        page()
    print(f"  the page ran {len(queries)} statements")
    if args.plan:
        cache.clear()  # the grouped statements run only on a cold cache
        with CaptureQueriesContext(connection) as queries:
            cost_overview()
        with connection.cursor() as cursor:
            for query in queries.captured_queries:
                cursor.execute("EXPLAIN ANALYZE " + query["sql"])
                print(query["sql"][:200], "\n", "\n".join(row[0] for row in cursor.fetchall()), "\n")
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
