"""The researcher pages' CPU, warm, against the login page's: the figure a loaded machine can still
give. Wall-clock ratios (bench/crowd_pages.py) move by half with the load of a shared two-core box;
the CPU a request costs moves much less. Each page is asked for `--requests` times after
`--warm-up` requests (the figure cache as they left it), one request at a time in one process
through Django's test client, and each side's CPU read apart: this process's (`process_time`:
Django, the templates, psycopg2) and the database backend's (`/proc/<pid>/stat` of the
connection's backend, so PostgreSQL must run on this machine).

    DEBUG=0 SECRET_KEY=... DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_433_bench \\
        .venv/bin/python bench/page_cpu.py [--requests 20] [--warm-up 2] [--only workers,bonuses]

Measures the corpus and crowd bench/crowd_pages.py built in that database (run it first, its
`--keep` reuses them). DEBUG off, as production serves (no query log; the static files' manifest:
`manage.py collectstatic` first); with DEBUG on, the query log's cost is in every figure.
On a quiet machine the wall time of a warm page is about its CPU, so the CPU ratio is what the
wall-clock ratio would be there; the wall column shows how far the load moved it.
"""

import argparse
import os
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_433_bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20, help="requests timed per page")
    parser.add_argument("--warm-up", type=int, default=2, help="requests before the timed ones")
    parser.add_argument("--only", default="", help="only the pages whose name holds one of these (a,b)")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client
    from django.test.utils import setup_test_environment

    from bench.crowd_pages import request, researcher_pages, team_member
    from bench.writing_claim_cpu import per_call

    setup_test_environment()
    settings.ALLOWED_HOSTS = ["*"]
    superuser = Client()
    superuser.force_login(User.objects.create_superuser(f"bench-cpu-{time.time_ns()}", password="x"))
    member = Client()
    member.force_login(team_member())
    pages = researcher_pages(superuser, member)
    if args.only:
        wanted = args.only.split(",")
        pages = [page for page in pages if page[2] is None or any(part in page[0] for part in wanted)]
    # DEBUG off: the security middleware sends plain http to https, as behind the proxy.
    secure = {} if settings.DEBUG else {"secure": True}
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    print(f"DEBUG {settings.DEBUG}, {args.requests} warm requests a page, per request (ms); load {os.getloadavg()}")
    print("| page | wall | client CPU | backend CPU | CPU | CPU × login | wall × login |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    baseline: tuple[float, float] | None = None
    for name, url, logged_in in pages:
        browser = logged_in or Client()

        def ask(browser: Client = browser, url: str | tuple[str, dict] = url) -> None:
            response = request(browser, url, **secure)
            assert response.status_code == 200, (url, response.status_code)

        for _ in range(args.warm_up):
            ask()

        def timed(ask: Callable[[], None] = ask) -> None:
            for _ in range(args.requests):
                ask()

        wall, client, backend = per_call(pid, args.requests, timed)
        cpu = client + backend
        baseline = baseline or (cpu, wall)
        print(
            f"| {name} | {wall:.1f} | {client:.1f} | {backend:.1f} | {cpu:.1f} | "
            f"{cpu / baseline[0]:.1f} | {wall / baseline[1]:.1f} |"
        )
    print(f"load at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
