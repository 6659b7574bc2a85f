"""Writing claims at MultiNLI scale when a genre of the study's pool has nothing left.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_h1 \\
        nice -n 10 .venv/bin/python bench/writing_claims_scale.py [--premises 433000] [--claims 150]

Builds, in a throwaway database, one dataset of `--premises` premises in MultiNLI's five training
genres (one writing a premise). Fiction is written out (every premise has its writing); half of
each other genre is written. A balanced study pools all five genres: its claims never served
fiction, so fiction is the least-served group and every claim asks it first, the case where a
claim walked the whole dataset to learn that fiction had nothing left.

Two phases, stale statistics first (the premise and claim tables analysed while they held a
thousand premises, autovacuum off, as after a bulk import), then fresh ones (ANALYZE). Each prints
writing claims per second from `--concurrency` claimers (fresh workers, each in a study session of
their own) as a ratio to one-row SELECT ... FOR UPDATE transactions at the same concurrency in the
same phase. The claimers are forked processes, as a web server's workers are; `--runners threads`
runs them as threads of one process instead, where the claim's Python shares one interpreter lock
and bounds the rate before the database does (best of 3 rounds each; the goal is 0.5x), the claim's median and p99 latency, and
EXPLAIN (ANALYZE, BUFFERS) of the candidate statement for the written-out genre and for a genre
with work. The machine is shared: the load average is printed with each figure.
"""

import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

GENRES = ("fiction", "government", "slate", "telephone", "travel")
WRITTEN_OUT = "fiction"
STALE_AT = 1000
# What a claim reads and writes: the premises, the claims, the claim order kept from the premises.
CLAIM_TABLES = ("collection_premise", "collection_writingclaim", "collection_premise_claim_order")


def load() -> str:
    return f"load {os.getloadavg()[0]:.2f}"


def timed_calls(share, function, latencies, errors):
    """function(item) for every item of `share`, each call's seconds added to `latencies` and each
    failure's repr to `errors`."""
    for item in share:
        started = time.perf_counter()
        try:
            function(item)
        except Exception as error:
            errors.append(repr(error))
            continue
        latencies.append(time.perf_counter() - started)


def run_threads(count, items, function):
    """function(item) for every item from `count` threads; (calls, seconds, latencies, errors)."""
    from django.db import connections

    # list.append is atomic: the threads share both lists.
    errors: list[str] = []
    latencies: list[float] = []

    def body(share):
        try:
            timed_calls(share, function, latencies, errors)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=(items[i::count],)) for i in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies), time.perf_counter() - started, latencies, errors


def run_processes(count, items, function, warm_items=None):
    """function(item) for every item from `count` forked processes, as a web server's workers take
    claims (an interpreter and a connection each, no lock shared between them); (calls, seconds,
    latencies, errors). Each process connects before the clock starts and, given `warm_items` (one a
    process), calls the function once on its own, untimed, as a server's worker has served requests
    on its connection before (`DATABASE_CONN_MAX_AGE` keeps it for a minute): the server's caches of
    the connection (catalogue, compiled functions, plans) are warm."""
    import multiprocessing

    from django.db import connection, connections

    connections.close_all()  # a fork shares no connection with its parent
    context = multiprocessing.get_context("fork")
    results, ready, start = context.Queue(), context.Semaphore(0), context.Event()

    def body(share, warm_item):
        latencies: list[float] = []
        errors: list[str] = []
        try:
            connection.ensure_connection()
            if warm_item is not None:
                function(warm_item)
            ready.release()
            start.wait()
            timed_calls(share, function, latencies, errors)
        finally:
            connections.close_all()
            results.put((latencies, errors))

    processes = [
        context.Process(target=body, args=(items[i::count], warm_items[i] if warm_items else None))
        for i in range(count)
    ]
    for process in processes:
        process.start()
    for _ in processes:
        ready.acquire()
    started = time.perf_counter()
    start.set()
    gathered = [results.get() for _ in processes]
    seconds = time.perf_counter() - started
    for process in processes:
        process.join()
    latencies = [latency for share, _ in gathered for latency in share]
    return len(latencies), seconds, latencies, [error for _, errors in gathered for error in errors]


def add_premises(dataset_id, genre_ids, first, last):
    """Premises numbered first..last-1, genre by number; fiction's written out, half of the others'."""
    from django.db import connection

    fiction = genre_ids[0]
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO collection_premise (dataset_id, genre_id, prompt_id, text, text_hash, parse, binary_parse,"
            " split, status, writings_done, source, created_at)"
            " SELECT %s, (%s::int[])[1 + n %% 5], 'p' || n, 'A premise numbered ' || n || '.', md5(n::text), '', '',"
            " 'train', 'available', CASE WHEN (%s::int[])[1 + n %% 5] = %s OR n %% 2 = 0 THEN 1 ELSE 0 END,"
            " 'mnli.jsonl', now() FROM generate_series(%s, %s) n",
            [dataset_id, genre_ids, genre_ids, fiction, first, last - 1],
        )


def build(premises):
    from django.contrib.auth.models import User
    from django.db import connection

    from corpus.models import Dataset, Genre, PromptFamily
    from crowd.models import ServingOrder, Study, TaskKind

    family, _ = PromptFamily.objects.get_or_create(
        slug="bench-mnli", defaults={"name": "MultiNLI", "instructions": "Write three sentences.",
        "entailment_prompt": "Definitely correct", "neutral_prompt": "Might be correct",
        "contradiction_prompt": "Definitely incorrect"},
    )  # fmt: skip
    # MultiNLI's genres may be there already (a data migration adds them).
    genres = [
        Genre.objects.get_or_create(slug=slug, defaults={"name": slug.title(), "is_training": True, "family": family})[
            0
        ]
        for slug in GENRES
    ]
    dataset = Dataset.objects.create(slug="mnli-scale", name="MultiNLI scale", writings_per_premise=1)
    study = Study.objects.create(
        slug="mnli-writing", name="Writing", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="C",
        serving_order=ServingOrder.BALANCED,
    )  # fmt: skip
    study.pool_genres.set(genres)
    with connection.cursor() as cursor:
        for table in CLAIM_TABLES:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    genre_ids = [genre.pk for genre in genres]
    add_premises(dataset.pk, genre_ids, 0, STALE_AT)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(CLAIM_TABLES)}")
    add_premises(dataset.pk, genre_ids, STALE_AT, premises)
    users = User.objects.bulk_create(User(username=f"writer{i}") for i in range(4000))
    from corpus.models import Worker

    Worker.objects.bulk_create(Worker(user=user) for user in users)
    return dataset, study, genres


def reset_claims():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE collection_writingclaim CASCADE")
        cursor.execute("UPDATE collection_premise_claim_order SET claims_made = 0 WHERE claims_made <> 0")
    from crowd.models import StudySession

    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {StudySession._meta.db_table}")


def explain(dataset, genre, label):
    from django.db import connection, transaction
    from django.utils import timezone

    from collection.writing_claims import candidate_statement
    from corpus.models import Worker

    worker = Worker.objects.order_by("-pk")[0]
    sql, params = candidate_statement(worker, timezone.now(), dataset=dataset, pool=([genre.pk], []))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        plan = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    print(f"    EXPLAIN ANALYZE, candidate statement, {label} ({genre.slug}):")
    for line in plan:
        print("      " + line)


def explain_claim(study, worker):
    """One claim with `auto_explain` on its connection: each statement the claim's function ran, with
    its time and the scans of its plan (PostgreSQL's own notices; the bench runs as a superuser)."""
    import re

    from django.db import connection

    from collection.writing_claims import claim_next_premise
    from crowd.models import StudySession

    session = StudySession.objects.create(study=study, worker=worker, external_session_id="explained")
    session.study = study
    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_analyze = on", "log_level = notice"):
            cursor.execute(f"SET auto_explain.{setting}")
        cursor.execute("SET client_min_messages = notice")
    notices = connection.connection.notices
    del notices[:]
    claim_next_premise(session.worker, study_session=session)
    with connection.cursor() as cursor:
        cursor.execute("SET auto_explain.log_min_duration = -1")
    print("    one claim's statements (auto_explain, ms, the scans of each plan):")
    for notice in notices:
        found = re.search(r"duration: ([\d.]+) ms\s+plan:\s+Query Text: (.*)", notice, re.S)
        if found is None:
            continue
        text = " ".join(found.group(2).split())
        scans = sorted(
            set(re.findall(r"(?:Index Only Scan|Index Scan|Seq Scan|Bitmap Heap Scan) (?:using \w+ )?on \w+", text))
        )
        print(f"      {float(found.group(1)):7.3f}  {text[:110]}")
        for scan in scans:
            print(f"               {scan}")


def wal_position() -> int:
    """The server's WAL write position in bytes (every connection's writes, the claims' alone here)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint")
        return cursor.fetchone()[0]


def phase(name, args, dataset, study, genres, workers, rng):
    from django.db import connection, transaction

    from collection.writing_claims import claim_next_premise
    from crowd.models import StudySession

    def one_row_for_update(pk):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT id FROM collection_premise WHERE id = %s FOR UPDATE", [pk])
            cursor.fetchone()

    def run(items, function, warm_items):
        if args.runners == "threads":
            return run_threads(args.concurrency, items, function)
        return run_processes(args.concurrency, items, function, warm_items if args.warm_connections else None)

    premise_ids = [rng.randrange(1, args.premises) for _ in range(args.claims)]
    base = max(
        calls / seconds
        for calls, seconds, _, _ in (
            run(premise_ids, one_row_for_update, premise_ids[: args.concurrency]) for _ in range(3)
        )
    )
    print(f"  {name}: one-row FOR UPDATE txn {base:,.0f}/s  {load()}")

    def claim(session):
        # Only the claim is timed: each participant's session was made when they arrived.
        claim_next_premise(session.worker, study_session=session)

    # As a web server's worker has served claims before: what a process does once (a statement's
    # function looked up) is done before the claimers are forked.
    warm = StudySession.objects.create(study=study, worker=next(workers), external_session_id="warm-up")
    warm.study = study
    claim(warm)

    best, latencies_of_best = 0.0, []
    for round_number in range(3):
        batch = StudySession.objects.bulk_create(
            StudySession(study=study, worker=worker, external_session_id=f"s{worker.pk}")
            for worker in (next(workers) for _ in range(args.claims))
        )
        warm_ups = StudySession.objects.bulk_create(
            StudySession(study=study, worker=worker, external_session_id=f"w{worker.pk}")
            for worker in (next(workers) for _ in range(args.concurrency if args.warm_connections else 0))
        )
        for session in [*batch, *warm_ups]:
            session.study = study  # as the task view has it, read with the session
        wal_before = wal_position()
        calls, seconds, latencies, errors = run(batch, claim, warm_ups)
        rate = calls / seconds
        wal = (wal_position() - wal_before) / max(calls, 1) / 1024
        print(
            f"    round {round_number + 1}: {rate:,.1f} writing claims/s = {rate / base:.2f}x, median "
            f"{statistics.median(latencies) * 1000:.1f} ms, WAL {wal:.1f} KB a claim, errors {len(errors)} "
            f"{errors[:1]}  {load()}"
        )
        if rate > best:
            best, latencies_of_best = rate, sorted(latencies)
    p99 = latencies_of_best[int(len(latencies_of_best) * 0.99) - 1] * 1000
    print(
        f"  {name}: best {best:,.1f} claims/s = {best / base:.2f}x a one-row FOR UPDATE (goal 0.5x); p99 {p99:.1f} ms"
    )
    from django.test.utils import CaptureQueriesContext

    session = StudySession.objects.create(study=study, worker=next(workers), external_session_id="counted")
    with CaptureQueriesContext(connection) as statements:
        claim_next_premise(session.worker, study_session=session)
    print(f"    statements of one claim: {len(statements.captured_queries)}")
    explain_claim(study, next(workers))
    from django.db.models import Exists, OuterRef

    from collection.models import WritingClaim

    claims = WritingClaim.objects.filter(study_session__study=study)
    served = {
        "fiction": claims.filter(premise__genre=genres[0]).count(),
        "other": claims.exclude(premise__genre=genres[0]).count(),
        "none": StudySession.objects.filter(study=study)
        .exclude(Exists(WritingClaim.objects.filter(study_session=OuterRef("pk"))))
        .count(),
    }
    print(f"    served: {served}")
    explain(dataset, genres[0], "written out")
    explain(dataset, genres[1], "with work")


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--premises", type=int, default=433000)
    parser.add_argument("--claims", type=int, default=150, help="claims a round (each a fresh worker)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--phases", default="stale,fresh", help="stale statistics, fresh, or both (the default)")
    parser.add_argument(
        "--runners",
        choices=("processes", "threads"),
        default="processes",
        help="claimers as forked processes, as a web server's workers (the default), or as threads of one "
        "process, which share its interpreter lock",
    )
    parser.add_argument(
        "--warm-connections",
        action="store_true",
        help="each process makes one untimed call on its connection first (the baseline's and the claim's), as "
        "a server's worker has on a connection it keeps; without it each run's connections are new",
    )
    args = parser.parse_args()

    from bench.throwaway_database import run_with_django

    def body():
        from django.conf import settings

        settings.CONN_MAX_AGE = 0
        started = time.perf_counter()
        dataset, study, genres = build(args.premises)
        print(f"built {args.premises:,} premises in {time.perf_counter() - started:.0f} s; {load()}")
        from corpus.models import Worker

        workers = iter(list(Worker.objects.order_by("pk")))
        rng = random.Random(76)
        phases = args.phases.split(",")
        if "stale" in phases:
            phase("stale statistics", args, dataset, study, genres, workers, rng)
            reset_claims()
        if "fresh" in phases:
            from django.db import connection

            with connection.cursor() as cursor:
                cursor.execute(f"ANALYZE {', '.join(CLAIM_TABLES)}")
            phase("fresh statistics", args, dataset, study, genres, workers, rng)

    run_with_django("writing_claims_scale", body)


if __name__ == "__main__":
    main()
