"""Where a writing claim's CPU goes: the claim against a one-row SELECT ... FOR UPDATE transaction,
split into the client's CPU (Django and psycopg2) and the database backend's, and each of the
claim's statements in the backend's CPU, sent as they are and as a prepared statement (PREPARE,
then EXECUTE: no parse and, with a generic plan, no planning).

    DEBUG=0 SECRET_KEY=... ALLOWED_HOSTS=localhost \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python bench/writing_claim_cpu.py [--premises 30000] [--claims 900]

Builds its corpus as `bench/writing_claims_scale.py` does (a balanced study, one genre written
out) in a throwaway database, and claims one at a time in one process, so the CPU of each side is
that claim's alone. The backend's CPU is read from `/proc/<pid>/stat` of the connection's
backend (`pg_backend_pid()`), so PostgreSQL must run on this machine. Each statement of the
statement table is the last claim's, its claim deleted first, run in a savepoint rolled back after
it; the figure is less that of a savepoint around `SELECT 1`.
"""

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

TICKS = os.sysconf("SC_CLK_TCK")


def backend_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def per_call(pid: int, calls: int, run: Callable[[], None]) -> tuple[float, float, float]:
    """Wall, client CPU and backend CPU of one of `calls` calls, in ms."""
    wall, client, backend = time.perf_counter(), time.process_time(), backend_cpu(pid)
    run()
    return (
        (time.perf_counter() - wall) / calls * 1000,
        (time.process_time() - client) / calls * 1000,
        (backend_cpu(pid) - backend) / calls * 1000,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--premises", type=int, default=30000)
    parser.add_argument("--claims", type=int, default=900, help="claims timed (each a fresh worker)")
    parser.add_argument("--repeat", type=int, default=1000, help="runs of each statement in the statement table")
    args = parser.parse_args()

    from bench.throwaway_database import run_with_django
    from bench.writing_claims_scale import build

    def body() -> None:
        from django.db import connection, transaction

        from collection.writing_claims import claim_next_premise
        from corpus.models import Worker
        from crowd.models import StudySession

        _, study, _ = build(args.premises)
        workers = list(Worker.objects.order_by("pk")[: args.claims + 60])
        sessions = StudySession.objects.bulk_create(
            StudySession(study=study, worker=worker, external_session_id=f"s{worker.pk}") for worker in workers
        )
        for session in sessions:
            session.study = study  # as the task view has it, read with the session
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        for session in sessions[:50]:  # warm: the caches, the dry genre found
            claim_next_premise(session.worker, study_session=session)

        def for_update() -> None:
            for pk in range(1, args.claims + 1):
                with transaction.atomic(), connection.cursor() as cursor:
                    cursor.execute("SELECT id FROM collection_premise WHERE id = %s FOR UPDATE", [pk])
                    cursor.fetchone()

        def claims() -> None:
            for session in sessions[50 : 50 + args.claims]:
                claim_next_premise(session.worker, study_session=session)

        print(f"{args.premises:,} premises, one process, per call (ms):")
        print("| | wall | client CPU | backend CPU | both |")
        print("|---|---:|---:|---:|---:|")
        for label, run in (("one-row FOR UPDATE", for_update), ("writing claim", claims)):
            wall, client, backend = per_call(pid, args.claims, run)
            print(f"| {label} | {wall:.3f} | {client:.3f} | {backend:.3f} | {client + backend:.3f} |")

        statements: dict[str, tuple[str, list[Any]]] = {}

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            # Keyed by the whole text: two calls of cached statements share their first thirty characters.
            statements.setdefault(sql, (sql, list(params or [])))
            return execute(sql, params, many, context)

        session = sessions[50 + args.claims]
        with connection.execute_wrapper(record):
            claim_next_premise(session.worker, study_session=session)
        print("\nthe claim's statements, backend CPU a run less a savepoint around SELECT 1 (ms):")
        print("| statement | as sent | prepared |")
        print("|---|---:|---:|")
        with transaction.atomic(), connection.cursor() as cursor:
            # The recorded claim taken back (rolled back at the end), so its statements run as they
            # ran: the take finds its premise with room and inserts.
            cursor.execute("DELETE FROM collection_writingclaim WHERE worker_id = %s", [session.worker.pk])

            def in_savepoint(sql: str, params: list[Any]) -> Callable[[], None]:
                def run() -> None:
                    for _ in range(args.repeat):
                        cursor.execute("SAVEPOINT statement")
                        cursor.execute(sql, params)
                        cursor.execute("ROLLBACK TO SAVEPOINT statement")

                return run

            empty = per_call(pid, args.repeat, in_savepoint("SELECT 1", []))[2]
            for number, (head, (sql, params)) in enumerate(statements.items()):
                pieces = sql.split("%s")
                numbered = pieces[0] + "".join(f"${place}{piece}" for place, piece in enumerate(pieces[1:], 1))
                cursor.execute(f"PREPARE claim_statement_{number} AS {numbered}")
                execute = f"EXECUTE claim_statement_{number}({', '.join(['%s'] * len(params))})"
                in_savepoint(execute, params)()  # past the custom plans, to a generic one if it is chosen
                sent = per_call(pid, args.repeat, in_savepoint(sql, params))[2] - empty
                prepared = per_call(pid, args.repeat, in_savepoint(execute, params))[2] - empty
                print(f"| {head[:44]}… | {sent:.3f} | {prepared:.3f} |")
            transaction.set_rollback(True)

    run_with_django("writing_claim_cpu", body)


if __name__ == "__main__":
    main()
