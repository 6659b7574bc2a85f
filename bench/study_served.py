"""What a claim in a study with catch trials reads to keep the study's share, at crowd scale.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/study_served.py \\
        [--claims 160000] [--sessions 847] [--pairs 40000] [--repeat 5]

A throwaway database (bench/throwaway_database.py) gets a dataset of --pairs pairs
(bench/tagging_probes.py's `fill`), a validation study with a catch share, --sessions sessions of
as many workers, and --claims submitted validation claims of those sessions in batches of five,
one in 25 a catch trial (copied in by SQL). The sessions' served counts (`SessionServed`) are
filled by the migration's own statement (validation/migrations/0013_session_served.py), then
ANALYZE. Best of --repeat, with EXPLAIN ANALYZE:

- before: the study's claims counted (`Count("batch", distinct=True)` and the catch claims), what
  `quality.catch_trials._owed` asked on every claim;
- after: the sum of its sessions' rows (`validation.selectors.study_served`).
"""

import argparse
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tagging_probes import best_ms, explained, fill
from bench.throwaway_database import run_with_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--claims", type=int, default=160_000)
    parser.add_argument("--sessions", type=int, default=847)
    parser.add_argument("--pairs", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run_with_django("study_served", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.db import connection
    from django.db.models import Count, Q
    from django.utils import timezone

    from corpus.models import Genre, Pair, Worker
    from crowd.models import Study, StudySession, TaskKind
    from validation.models import ValidationClaim
    from validation.selectors import study_served

    started = time.perf_counter()
    genre = Genre.objects.order_by("pk")[0]
    dataset, _ = fill("served", args.pairs, genre, timezone.now() - timedelta(days=1))
    study = Study.objects.create(
        slug="served", name="served", dataset=dataset, task_kind=TaskKind.VALIDATION, catch_trial_share=0.2
    )
    users = User.objects.bulk_create([User(username=f"v{n}") for n in range(args.sessions)])
    workers = Worker.objects.bulk_create([Worker(user=user) for user in users])
    sessions = StudySession.objects.bulk_create(
        [StudySession(study=study, worker=worker, external_session_id=f"s{worker.pk}") for worker in workers]
    )
    first_session, first_worker = sessions[0].pk, workers[0].pk
    first_pair = Pair.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True)[0]
    per_session = -(-args.claims // args.sessions)
    table = ValidationClaim._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (study_session_id, worker_id, pair_id, batch, is_catch_trial, credited, status,"
            " created_at, expires_at, submitted_at, take_backs)"
            " SELECT %s + g / %s, %s + g / %s, %s + ((g / %s) * %s + g %% %s) %% %s,"
            " md5((g / %s)::text || '-' || ((g %% %s) / 5)::text)::uuid, g %% 25 = 0, false, 'submitted',"
            " now(), now(), now(), 0 FROM generate_series(0, %s - 1) g",
            [
                first_session, per_session, first_worker, per_session, first_pair, per_session, per_session,
                per_session, args.pairs, per_session, per_session, args.claims,
            ],
        )  # fmt: skip
        fill_served = importlib.import_module("validation.migrations.0013_session_served").FILL
        cursor.execute(fill_served)
        cursor.execute("ANALYZE")
    print(f"built {args.claims:,} claims of {args.sessions} sessions in {time.perf_counter() - started:.1f} s")

    claims = ValidationClaim.objects.filter(study_session__study_id=study.pk)
    counted = {"batches": Count("batch", distinct=True), "catch": Count("pk", filter=Q(is_catch_trial=True))}
    old = claims.aggregate(**counted)
    assert study_served(study.pk) == (old["batches"], old["catch"]), (study_served(study.pk), old)
    before = best_ms(lambda: claims.aggregate(**counted), args.repeat)
    after = best_ms(lambda: study_served(study.pk), args.repeat)
    print(f"\n{old['batches']:,} batches, {old['catch']:,} catch trials")
    print(f"before (the study's claims counted): {before:,.2f} ms\nafter (its sessions' rows summed): {after:,.2f} ms")
    with connection.cursor() as cursor:
        for label, statement in (("before", "old"), ("after", "new")):
            if statement == "old":
                sql = (
                    f"SELECT count(DISTINCT c.batch), count(*) FILTER (WHERE c.is_catch_trial) FROM {table} c"
                    f" JOIN {StudySession._meta.db_table} s ON s.id = c.study_session_id WHERE s.study_id = %s"
                )
            else:
                from validation.models import SessionServed

                sql = (
                    f"SELECT sum(r.batches), sum(r.catch_trials) FROM {SessionServed._meta.db_table} r"
                    f" JOIN {StudySession._meta.db_table} s ON s.id = r.study_session_id"
                    " WHERE s.study_id = %s AND NOT s.is_preview"
                )
            print(f"\n### {label}\n{explained(sql, [study.pk])}")


if __name__ == "__main__":
    main()
