"""Worker submits in-process, through the whole middleware stack (Django's test client): time, SQL time and statements.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench CELERY_BROKER_URL=redis://127.0.0.1:6379/9 \\
        .venv/bin/python bench/submit_profile.py validation|writing [--submits 60] [--study] [--profile [--sort tottime]]

Uses the corpus bench/run.py generated. Each of N fresh accounts claims a task first (not timed),
then the N submits are timed one after another; the last one's statements are listed with their
times. `--study`: each account arrives by a study's Prolific link instead (a study session: the task
count, credits and catch trials of a real study, as `bench/human_pace.py --study`). `--profile` adds cProfile's view of the N submits. A figure to set beside the human-pace run
(bench/human_pace.py): what one submit costs with no other request on the machine.
"""

import argparse
import cProfile
import os
import pstats
import re
import secrets
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "bench")]
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # DEBUG stays off, as in production
os.environ.setdefault("NLI_DEFAULT_DATASET", "bench")
os.environ.setdefault("ALLOWED_HOSTS", "*")

LABEL_FIELD = re.compile(r'name="(item-[0-9a-f]+)"')


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=["validation", "writing"])
    parser.add_argument("--submits", type=int, default=60)
    parser.add_argument("--study", action="store_true", help="arrive by a study's Prolific link, as participants do")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--callees", action="append", default=[], help="with --profile: what this function calls")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.db.backends.signals import connection_created
    from django.test import Client
    from gunicorn_pages import sessions_for

    from annotation_site.wiring import load_before_first_request

    load_before_first_request()  # as the web server does before it forks
    statements: list[list[tuple[float, str]]] = [[]]

    def timed(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            statements[-1].append((time.perf_counter() - started, sql[:110]))

    def watch(sender, connection, **kwargs):
        if timed not in connection.execute_wrappers:
            connection.execute_wrappers.append(timed)

    connection_created.connect(watch)
    connection.ensure_connection()
    watch(None, connection)

    prepared = []
    if args.study:
        from human_pace import study_links

        link = study_links()[0 if args.task == "validation" else 1]
        arrivals = [None] * args.submits
    else:
        arrivals = sessions_for(args.submits)
    for number, cookie in enumerate(arrivals):
        client = Client(HTTP_HOST="127.0.0.1")
        if cookie is None:
            arrived = client.get(link(number))
            if arrived.status_code not in (200, 302):
                raise SystemExit(f"the study link answered {arrived.status_code}: {arrived.content[:300]!r}")
        else:
            client.cookies[settings.SESSION_COOKIE_NAME] = cookie.split("=", 1)[1]
        statements.append([])
        page = client.get("/validate/next/" if args.task == "validation" else "/write/next/", follow=True)
        if args.task == "validation":
            data = dict.fromkeys(set(LABEL_FIELD.findall(page.content.decode())), "neutral")
        else:
            stamp = secrets.token_hex(3)
            data = {
                "entailment": f"Someone is somewhere ({stamp}).",
                "neutral": f"Someone may be happy ({stamp}).",
                "contradiction": f"Nobody is anywhere ({stamp}).",
            }
        prepared.append((client, page.request["PATH_INFO"], data))

    profile = cProfile.Profile() if args.profile else None
    times, sql_times, counts = [], [], []
    for client, path, data in prepared:
        statements.append([])
        if profile:
            profile.enable()
        started = time.perf_counter()
        answer = client.post(path, data)
        elapsed = time.perf_counter() - started
        if profile:
            profile.disable()
        if answer.status_code != 302:
            raise SystemExit(f"a submit was refused ({answer.status_code}): {answer.content[:300]!r}")
        times.append(elapsed * 1000)
        sql_times.append(sum(seconds for seconds, _ in statements[-1]) * 1000)
        counts.append(len(statements[-1]))
    print(
        f"{args.task}: {len(times)} submits, median {statistics.median(times):.1f} ms (min {min(times):.1f}, the first {times[0]:.1f}), "
        f"SQL {statistics.median(sql_times):.1f} ms in {statistics.median(counts):.0f} statements"
    )
    for seconds, sql in statements[-1]:
        print(f"   {seconds * 1000:6.2f} ms  {sql}")
    if profile:
        stats = pstats.Stats(profile).sort_stats(args.sort)
        stats.print_stats(45)
        for name in args.callees:
            stats.print_callees(name)


if __name__ == "__main__":
    main()
