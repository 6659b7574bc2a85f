"""Server-side latency of worker pages under gunicorn: one configuration against another.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench .venv/bin/python bench/gunicorn_pages.py \\
        [--clients 50] [--seconds 15] [--configs "sync:3:1,gthread:2:8"]

Uses the corpus bench/run.py generated (its database), gives every client its own worker
account (a session row made directly, as a login would), starts gunicorn for each configuration
(worker class : processes : threads) and has `--clients` threads ask for the validation page
(`/validate/next/` then the batch page) and the login page (the baseline: a template, no data)
as fast as the server answers, for `--seconds`. Prints requests/s and p50/p99 latency per page,
and the ratio of each page's p99 to the login page's in the same configuration.
"""

import argparse
import http.client
import os
import secrets
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
PORT = 8765


def sessions_for(count):
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    from corpus.models import Worker

    cookies = []
    for index in range(count):
        user = User.objects.create(username=f"gunicorn-{time.time_ns()}-{index}")
        Worker.objects.create(user=user)
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        cookies.append(f"{settings.SESSION_COOKIE_NAME}={session.session_key}")
    return cookies


def client_loop(cookie, deadline, latencies, errors):
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
    while time.perf_counter() < deadline:
        for page, path in (("login page", "/accounts/login/"), ("validation page", "/validate/next/")):
            started = time.perf_counter()
            try:
                connection.request("GET", path, headers={"Cookie": cookie})
                response = connection.getresponse()
                response.read()
                if response.status == 302 and page == "validation page":
                    connection.request("GET", response.getheader("Location", ""), headers={"Cookie": cookie})
                    follow = connection.getresponse()
                    follow.read()
                    status = follow.status
                else:
                    status = response.status
                if status != 200:
                    errors.append(status)
            except (OSError, http.client.HTTPException) as error:
                errors.append(repr(error))
                connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
                continue
            latencies[page].append(time.perf_counter() - started)


def run_config(config, cookies, seconds):
    worker_class, processes, threads = config.split(":")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "annotation_site.wsgi",
            "-c",
            str(REPO / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{PORT}",
            "--worker-class",
            worker_class,
            "--workers",
            processes,
            "--threads",
            threads,
        ],
        cwd=REPO,
        env=os.environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                http.client.HTTPConnection("127.0.0.1", PORT, timeout=2).request("GET", "/accounts/login/")
                break
            except OSError:
                time.sleep(0.2)
        latencies: dict[str, list[float]] = {"login page": [], "validation page": []}
        errors: list[str] = []
        deadline = time.perf_counter() + seconds
        threads_ = [
            threading.Thread(target=client_loop, args=(cookie, deadline, latencies, errors)) for cookie in cookies
        ]
        for thread in threads_:
            thread.start()
        for thread in threads_:
            thread.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
    base_p99 = None
    print(
        f"{config} ({worker_class}, {processes} processes x {threads} threads), {len(cookies)} clients, {seconds} s, {len(errors)} errors {errors[:3]}"
    )
    for page, values in latencies.items():
        values.sort()
        p99 = values[int(len(values) * 0.99) - 1] if values else float("nan")
        base_p99 = base_p99 or p99
        print(
            f"  {page:<18} {len(values) / seconds:7.1f} req/s   p50 {statistics.median(values) * 1000:7.1f} ms   "
            f"p99 {p99 * 1000:7.1f} ms   {p99 / base_p99:5.2f}x the login page's p99"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--configs", default="sync:3:1,gthread:2:8")
    args = parser.parse_args()
    cookies = sessions_for(args.clients)
    for config in args.configs.split(","):
        run_config(config, cookies, args.seconds)


if __name__ == "__main__":
    main()
