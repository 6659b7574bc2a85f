"""Worker pages under gunicorn at human pace: server-side p50/p99 per page.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench .venv/bin/python bench/human_pace.py \\
        [--validators 150] [--writers 50] [--seconds 120] [--think 20:60] [--configs "gthread:2:8"] [--study]

Uses the corpus bench/run.py generated (its database). Every simulated crowdworker has its own
account and session and loops like a person: arrive (`/validate/next/` or `/write/next/`, which
claims and redirects), read the task page, think (a uniform pause, `--think` seconds, min:max),
submit (five labels, or three sentences), and arrive again. Each client also asks for the login
page now and then (the baseline: a template, no data). gunicorn runs with gunicorn.conf.py (the
worker class, processes and threads of `--configs` on top) and logs every request's own time
(`%(D)s`, measured inside the server from the request's arrival at a worker to its response,
so the client's and the network's time are not in it); p50/p99 are taken per page from that log.
"""

import argparse
import http.cookiejar
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("NLI_DEFAULT_DATASET", "bench")  # the corpus bench/run.py generates: workers arrive into it
PORT = 8766
BASE = f"http://127.0.0.1:{PORT}"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
LABEL_FIELD = re.compile(r'name="(item-[0-9a-f]+)"')

PAGES = [  # (page, method, path pattern)
    ("login page (baseline)", "GET", re.compile(r"^/accounts/login/")),
    ("study link: arrival (--study)", "GET", re.compile(r"^/study/")),
    ("validation: arrive + claim", "GET", re.compile(r"^/validate/next/")),
    ("validation: batch page", "GET", re.compile(r"^/validate/batch/")),
    ("validation: submit five labels", "POST", re.compile(r"^/validate/batch/")),
    ("writing: arrive + claim", "GET", re.compile(r"^/write/next/")),
    ("writing: task page", "GET", re.compile(r"^/write/[0-9a-f-]{36}/$")),
    ("writing: submit three sentences", "POST", re.compile(r"^/write/[0-9a-f-]{36}/$")),
]


def logged_in_opener(session_cookie):
    """An opener with the person's session cookie in its jar (the CSRF cookie joins it on the first page)."""
    name, value = session_cookie.split("=", 1)
    jar = http.cookiejar.CookieJar()
    jar.set_cookie(
        http.cookiejar.Cookie(
            0, name, value, None, False, "127.0.0.1", False, False, "/", True, False, None, False, None, None, {}
        )
    )
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))


def fetch(opener, path, data=None):
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    try:
        with opener.open(BASE + path, body, timeout=60) as response:
            return response.status, response.geturl(), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.geturl(), error.read().decode(errors="replace")


def arrived_opener(link):
    """A participant's browser after opening their study link (the site logs them in: a session cookie)."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    status, _, page = fetch(opener, link)
    if status != 200:
        raise RuntimeError(f"the study link answered {status}: {page[:200]}")
    return opener


def person(kind, cookie, deadline, think, counts, errors, rng):
    # `cookie`: a session of an account made beforehand, or ("link", a study link to arrive by).
    opener = arrived_opener(cookie[1]) if isinstance(cookie, tuple) else logged_in_opener(cookie)
    number = 0
    while time.time() < deadline:
        if rng.random() < 0.2:
            fetch(opener, "/accounts/login/")
        status, url, page = fetch(opener, "/validate/next/" if kind == "validator" else "/write/next/")
        path = urllib.parse.urlparse(url).path
        if status != 200 or "/next/" in path or ("/batch/" not in path and "/write/" not in path):
            counts["no task"] += 1
            time.sleep(min(think[1], max(0.0, deadline - time.time())))
            continue
        token = CSRF.search(page)
        time.sleep(rng.uniform(*think))
        if time.time() >= deadline:
            break
        number += 1
        if kind == "validator":
            data = {
                name: rng.choice(["entailment", "neutral", "contradiction"]) for name in set(LABEL_FIELD.findall(page))
            }
        else:
            stamp = f"{id(opener) % 100000}-{number}"
            data = {
                "entailment": f"Someone is somewhere ({stamp}).",
                "neutral": f"Someone may be happy ({stamp}).",
                "contradiction": f"Nobody is anywhere ({stamp}).",
            }
        data["csrfmiddlewaretoken"] = token.group(1) if token else ""
        status, url, answer = fetch(opener, path, data)
        if status != 200 or urllib.parse.urlparse(url).path == path:
            errors.append((kind, status))
            if os.environ.get("PACE_SHOW_REFUSALS"):
                print("refused:", status, re.findall(r'class="[^"]*error[^"]*"[^>]*>([^<]+)', answer)[:3])
        else:
            counts[kind] += 1


def run_config(config, cookies, args):
    # "shipped": gunicorn.conf.py as it is (what `make serve` and the Dockerfile run); otherwise
    # worker class : processes : threads on top of it.
    if config == "shipped":
        processes = os.environ.get("GUNICORN_WORKERS", str(os.cpu_count()))  # as gunicorn.conf.py reads them
        worker_class, threads, overrides = "gunicorn.conf.py: gthread", os.environ.get("GUNICORN_THREADS", "8"), []
    else:
        worker_class, processes, threads = config.split(":")
        overrides = ["--worker-class", worker_class, "--workers", processes, "--threads", threads]
    # DEBUG is off: pages name their static files through the manifest, as `make serve` builds it.
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"], cwd=REPO, check=True)
    with tempfile.TemporaryDirectory(prefix="nli-human-pace-") as tmp:
        log = Path(tmp) / "access.log"
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
                *overrides,
                "--access-logfile",
                str(log),
                "--access-logformat",
                "%(m)s %(U)s %(s)s %(D)s",
            ],
            cwd=REPO,
            env=os.environ,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(150):
                try:
                    urllib.request.urlopen(BASE + "/accounts/login/", timeout=2).read()
                    break
                except OSError:
                    time.sleep(0.2)
            counts = {"validator": 0, "writer": 0, "no task": 0}
            errors: list[str] = []
            deadline = time.time() + args.seconds
            rng = random.Random(7)
            people = [
                threading.Thread(
                    target=person,
                    args=(kind, cookie, deadline, args.think_range, counts, errors, random.Random(rng.random())),
                )
                for kind, cookie in cookies
            ]
            started = time.time()
            for _index, thread in enumerate(people):
                thread.start()
                time.sleep(args.think_range[1] / len(people))  # arrivals spread over one think time
            for thread in people:
                thread.join()
            elapsed = time.time() - started
        finally:
            server.terminate()
            try:
                server.wait(timeout=40)  # gthread waits for kept-alive connections (graceful_timeout)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if args.keep_log:
            Path(args.keep_log).write_text(log.read_text())
        times: dict[str, list[float]] = {page: [] for page, _, _ in PAGES}
        for line in log.read_text().splitlines():
            method, path, _status, micros = line.split()
            for page, page_method, pattern in PAGES:
                if method == page_method and pattern.match(path):
                    times[page].append(int(micros) / 1000)
                    break
    load = os.getloadavg()
    print(
        f"{config}: {worker_class}, {processes} processes x {threads} threads; {args.validators} validators + "
        f"{args.writers} writers, think {args.think}, {elapsed:.0f} s; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    print(
        f"  done: {counts['validator']} batches, {counts['writer']} writings, {counts['no task']} arrivals without a task, "
        f"{len(errors)} failed submits {errors[:3]}"
    )
    base = None
    for page, values in times.items():
        if not values:
            continue
        values.sort()
        p99 = values[max(0, int(len(values) * 0.99) - 1)]
        base = base or p99
        print(
            f"  {page:<34} n {len(values):6d}   p50 {statistics.median(values):7.1f} ms   p99 {p99:7.1f} ms"
            f"   max {values[-1]:7.1f} ms   p99 {p99 / base:5.2f}x the login page's"
        )


def study_links():
    """A validation study and a writing study on the bench corpus (open, unsigned links, more tasks a
    visit than a run takes), and each one's Prolific link for participant n."""
    import django

    django.setup()
    from corpus.models import Dataset
    from crowd.models import Study, TaskKind

    dataset = Dataset.objects.get(slug=os.environ["NLI_DEFAULT_DATASET"])
    run = time.time_ns()

    def link_of(kind):
        study = Study.objects.create(
            slug=f"pace-{kind}-{run}",
            name=f"Human pace ({kind})",
            dataset=dataset,
            task_kind=kind,
            tasks_per_batch=1000,
        )
        # One participant per person: a Prolific id opening a second study's link starts a new
        # session, which gives back the first session's unfinished task (crowd.arrival).
        return lambda n: (
            f"/study/{study.slug}/?PROLIFIC_PID={kind}{run}x{n}&STUDY_ID={study.slug}&SESSION_ID=s{kind}{run}x{n}"
        )

    return link_of(TaskKind.VALIDATION), link_of(TaskKind.WRITING)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--validators", type=int, default=150)
    parser.add_argument("--writers", type=int, default=50)
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--keep-log", help="copy gunicorn's access log (method, path, status, microseconds) here")
    parser.add_argument("--think", default="20:60", help="seconds a person spends on a task page, min:max")
    parser.add_argument(
        "--configs", default="shipped", help='"shipped" (gunicorn.conf.py) or class:processes:threads,...'
    )
    parser.add_argument(
        "--study",
        action="store_true",
        help="people arrive as Prolific participants by a validation study's and a writing study's links "
        "(a study session each: the task count, the credits, the catch trials and the hypothesis tally of a "
        "real study) instead of as accounts made beforehand",
    )
    args = parser.parse_args()
    args.think_range = tuple(float(x) for x in args.think.split(":"))
    sys.path.insert(0, str(REPO / "bench"))
    from gunicorn_pages import sessions_for

    if args.study:
        validation_link, writing_link = study_links()
        cookies = [("validator", ("link", validation_link(n))) for n in range(args.validators)] + [
            ("writer", ("link", writing_link(n))) for n in range(args.writers)
        ]
    else:
        cookies = [("validator", c) for c in sessions_for(args.validators)] + [
            ("writer", c) for c in sessions_for(args.writers)
        ]
    random.Random(3).shuffle(cookies)
    for config in args.configs.split(","):
        run_config(config, cookies, args)


if __name__ == "__main__":
    main()
