"""Load benchmark: simulated crowdworkers arriving by study links, against gunicorn and PostgreSQL,
with the web server killed once (SIGKILL, every process) mid-run and started again.

    .venv/bin/python bench/load_crowd.py --database-url postgres://postgres@127.0.0.1:5432/nli_hard_bench \\
        [--workers 200] [--tasks 4] [--kill-after 60] [--premises 3000] [--drop]

Builds the bench database (created if missing, migrated; a writing study and a validation study
over `--premises` dev premises, so every written pair needs validation), starts gunicorn
(gunicorn.conf.py: gthread) with an access log that holds each request's server-side time, and
runs `--workers` simulated Prolific participants in threads, arriving over the first seconds:
two thirds writers, one third validators (validators start a little later, once pairs exist).
Some behave badly on purpose:

- abandon (10%): open a task and leave it claimed, never submitting;
- double (10%): submit every task twice (a double click, or the back button and submit again).

Every participant retries a request that failed because the server was down (as a person
presses reload), so the kill also tests that a submit sent twice saves once. At the end the
database is checked against what the participants were told was saved:

- lost: a submit answered "saved" (the redirect to the next task) whose pairs or labels are missing;
- duplicated: a hypothesis stored more than once, a worker with two labels on one pair, or a
  pair whose label counter differs from its labels.

Prints requests, 5xx, connection failures during the kill, lost and duplicated (must be 0), and
server-side p50/p99 per page from gunicorn's access log. `--drop` drops the database afterwards.
"""

import argparse
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlsplit

import requests

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PORT = 8766
BASE = f"http://127.0.0.1:{PORT}"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _csrf_token(page):
    found = CSRF.search(page)
    assert found is not None, "no CSRF token on the page"
    return found.group(1)


LABEL_FIELD = re.compile(r'name="(item-[0-9a-f]+)"')
PAGES = [  # (name, method, path pattern) for the server-side figures
    ("study link", "GET", re.compile(r"^/study/[^/]+/$")),
    ("writing: next", "GET", re.compile(r"^/write/next/$")),
    ("writing: task page", "GET", re.compile(r"^/write/[0-9a-f-]{36}/$")),
    ("writing: submit", "POST", re.compile(r"^/write/[0-9a-f-]{36}/$")),
    ("validation: next", "GET", re.compile(r"^/validate/next/$")),
    ("validation: batch page", "GET", re.compile(r"^/validate/batch/[0-9a-f-]{36}/$")),
    ("validation: submit", "POST", re.compile(r"^/validate/batch/[0-9a-f-]{36}/$")),
]


def admin_sql(database_url, sql, params=()):
    """Run one statement on the server's `postgres` database (CREATE/DROP DATABASE); its rows."""
    import psycopg2

    connection = psycopg2.connect(database_url.rsplit("/", 1)[0] + "/postgres")
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall() if cursor.description else []
    finally:
        connection.close()


def prepare_database(database_url, premises):
    name = urlsplit(database_url).path.lstrip("/")
    if not admin_sql(database_url, "SELECT 1 FROM pg_database WHERE datname = %s", [name]):
        admin_sql(database_url, f'CREATE DATABASE "{name}"')
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, check=True)

    from corpus.models import Dataset, Genre, Premise, PromptFamily
    from crowd.models import Study, TaskKind

    family, _ = PromptFamily.objects.get_or_create(
        slug="load-fiction",
        defaults={
            "name": "Load fiction",
            "instructions": "Read the line.\n\nWrite three sentences.",
            "entailment_prompt": "Write a sentence that is definitely correct about the line.",
            "neutral_prompt": "Write a sentence that might be correct about the line.",
            "contradiction_prompt": "Write a sentence that is definitely incorrect about the line.",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug="load-fiction", defaults={"name": "Load fiction", "is_training": True, "family": family}
    )
    dataset, _ = Dataset.objects.get_or_create(slug="load", defaults={"name": "Load benchmark"})
    have = Premise.objects.filter(dataset=dataset).count()
    Premise.objects.bulk_create(
        [
            Premise(
                dataset=dataset,
                genre=genre,
                prompt_id=f"load{i}",
                split="dev",
                text=f"Premise {i}: the ferry left the harbour at dawn with {i % 97} passengers on board.",
            )
            for i in range(have, premises)
        ]
    )
    for slug, kind in (("load-writing", TaskKind.WRITING), ("load-validation", TaskKind.VALIDATION)):
        Study.objects.update_or_create(
            slug=slug,
            defaults={
                "name": slug,
                "dataset": dataset,
                "task_kind": kind,
                "tasks_per_batch": 100,
                "completion_code": "LOAD1234",
                "catch_trial_share": 0.0,
                "is_active": True,
            },
        )
    return dataset


def start_server(env, access_log):
    return subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "annotation_site.wsgi",
            "-c",
            "gunicorn.conf.py",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--access-logfile",
            str(access_log),
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def wait_until_up(timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            requests.get(f"{BASE}/accounts/login/", timeout=2)
            return True
        except requests.RequestException:
            time.sleep(0.2)
    return False


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.statuses: Counter[int] = Counter()
        self.connection_failures = 0
        self.written = []  # (text of each of the three hypotheses), answered "saved"
        self.labelled = []  # (participant id, pair pk, label), answered "saved"
        self.abandoned = 0
        self.double_submits = 0

    def count(self, status):
        with self.lock:
            self.requests += 1
            self.statuses[status] += 1


class Participant(threading.Thread):
    def __init__(self, number, role, behaviour, tasks, stats, start_at):
        super().__init__(daemon=True)
        self.number, self.role, self.behaviour, self.tasks = number, role, behaviour, tasks
        self.stats, self.start_at = stats, start_at
        self.pid = f"load-{role}-{number}"
        self.http = requests.Session()

    def call(self, method, url, **kwargs):
        """The request, retried while the server is down (a person pressing reload)."""
        for _ in range(120):
            try:
                response = self.http.request(method, url, timeout=60, allow_redirects=False, **kwargs)
            except requests.RequestException:
                with self.stats.lock:
                    self.stats.connection_failures += 1
                time.sleep(0.5)
                continue
            self.stats.count(response.status_code)
            return response
        raise RuntimeError(f"{self.pid}: the server did not come back")

    def follow(self, response):
        while response.status_code in (301, 302, 303):
            location = response.headers["Location"]
            response = self.call("GET", location if location.startswith("http") else BASE + location)
        return response

    def run(self):
        time.sleep(max(0.0, self.start_at - time.monotonic()))
        slug = "load-writing" if self.role == "writer" else "load-validation"
        page = self.follow(
            self.call(
                "GET",
                f"{BASE}/study/{slug}/",
                params={"PROLIFIC_PID": self.pid, "STUDY_ID": "load", "SESSION_ID": f"{self.pid}-s"},
            )
        )
        done = 0
        waited = 0
        while done < self.tasks:
            path = urlsplit(page.url).path
            if "/write/" in path and path != "/write/next/" and page.status_code == 200:
                page = self.write(page, path)
                done += 1
            elif "/validate/batch/" in path and page.status_code == 200:
                page = self.validate(page, path)
                done += 1
            else:  # no task yet (validators before the first pairs) or none left
                waited += 1
                if waited > 40:
                    return
                time.sleep(1.5)
                next_url = "/write/next/" if self.role == "writer" else "/validate/next/"
                page = self.follow(self.call("GET", BASE + next_url))
                continue
            if page is None:  # abandoned
                return
            time.sleep(random.uniform(0.2, 1.0))  # reading and typing, much shortened

    def submit(self, path, data):
        response = self.call("POST", BASE + path, data=data)
        saved = response.status_code in (302, 303)
        if self.behaviour == "double":
            with self.stats.lock:
                self.stats.double_submits += 1
            again = self.call("POST", BASE + path, data=data)
            response = again if again.status_code in (302, 303) else response
        return saved, response

    def write(self, page, path):
        if self.behaviour == "abandon":
            with self.stats.lock:
                self.stats.abandoned += 1
            return None
        token = _csrf_token(page.text)
        stamp = f"{self.pid} {time.monotonic_ns()}"
        texts = {
            "entailment": f"Boats sail in the morning ({stamp} e).",
            "neutral": f"The ferry is late for the first time ({stamp} n).",
            "contradiction": f"No boat ever leaves the harbour ({stamp} c).",
        }
        saved, response = self.submit(path, {"csrfmiddlewaretoken": token, **texts})
        if saved:
            with self.stats.lock:
                self.stats.written.append(tuple(texts.values()))
        return self.follow(response)

    def validate(self, page, path):
        if self.behaviour == "abandon":
            with self.stats.lock:
                self.stats.abandoned += 1
            return None
        token = _csrf_token(page.text)
        fields = sorted(set(LABEL_FIELD.findall(page.text)))
        labels = {name: random.choice(["entailment", "neutral", "contradiction"]) for name in fields}
        saved, response = self.submit(path, {"csrfmiddlewaretoken": token, **labels})
        if saved:
            with self.stats.lock:
                self.stats.labelled.extend((self.pid, int(name.split("-")[1]), label) for name, label in labels.items())
        return self.follow(response)


def check_database(stats, dataset):
    from django.db.models import Count, F

    from corpus.models import Pair, ValidationLabel

    pairs = Pair.objects.filter(dataset=dataset)
    hypotheses = Counter(pairs.values_list("hypothesis", flat=True))
    lost = sum(1 for texts in stats.written for text in texts if hypotheses[text] == 0)
    labels = Counter(
        ValidationLabel.objects.filter(pair__dataset=dataset, worker__isnull=False).values_list(
            "worker__external_id", "pair_id"
        )
    )
    lost += sum(1 for pid, pair, _ in stats.labelled if labels[(pid, pair)] == 0)
    duplicated = {
        "hypotheses stored twice": sum(1 for n in hypotheses.values() if n > 1),
        "two labels of one worker on a pair": sum(1 for n in labels.values() if n > 1),
        "pairs whose label counter is off": pairs.annotate(n=Count("labels")).exclude(n=F("label_count")).count(),
    }
    return lost, duplicated, pairs.count(), sum(labels.values())


def server_figures(access_log):
    times = defaultdict(list)
    for line in Path(access_log).read_text().splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        method, path, _status, micros = parts
        for name, page_method, pattern in PAGES:
            if method == page_method and pattern.match(path):
                times[name].append(int(micros) / 1000)
                break
    rows = []
    for name, _, _ in PAGES:
        values = sorted(times[name])
        if values:
            p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
            rows.append(f"  {name:24} {len(values):6}  p50 {statistics.median(values):7.1f} ms  p99 {p99:7.1f} ms")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="the bench database (created if missing)")
    parser.add_argument("--workers", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=4, help="tasks each participant does")
    parser.add_argument("--kill-after", type=float, default=60, help="seconds into the run the server is killed")
    parser.add_argument("--premises", type=int, default=3000)
    parser.add_argument("--arrival-seconds", type=float, default=30)
    parser.add_argument("--drop", action="store_true", help="drop the bench database afterwards")
    args = parser.parse_args()

    env = dict(
        os.environ,
        DATABASE_URL=args.database_url,
        DJANGO_SETTINGS_MODULE="annotation_site.settings",
        DEBUG="0",
        SECRET_KEY=os.environ.get("SECRET_KEY") or "load-bench-" + "k3y-" * 12,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        CELERY_BROKER_URL="",
        CACHE_URL="",
        ARTIFACTS_ON_ARRIVAL="0",
    )
    os.environ.update(env)
    import django

    django.setup()
    dataset = prepare_database(args.database_url, args.premises)
    access_log = Path("/tmp") / f"load_crowd-{os.getpid()}.log"
    server = start_server(env, access_log)
    if not wait_until_up():
        raise SystemExit("gunicorn did not start")

    stats = Stats()
    random.seed(11)
    started = time.monotonic()
    participants = []
    for number in range(args.workers):
        role = "writer" if number % 3 else "validator"
        behaviour = random.choices(["normal", "abandon", "double"], weights=[8, 1, 1])[0]
        delay = random.uniform(0, args.arrival_seconds) + (15 if role == "validator" else 0)
        participants.append(Participant(number, role, behaviour, args.tasks, stats, started + delay))
    for participant in participants:
        participant.start()

    time.sleep(max(0.0, started + args.kill_after - time.monotonic()))
    os.killpg(server.pid, signal.SIGKILL)  # the master and every worker process, mid-request
    server.wait()
    killed_at = time.monotonic() - started
    time.sleep(2)
    server = start_server(env, access_log)
    wait_until_up()
    back_at = time.monotonic() - started
    for participant in participants:
        participant.join()
    seconds = time.monotonic() - started
    os.killpg(server.pid, signal.SIGTERM)
    server.wait()

    lost, duplicated, pair_count, label_count = check_database(stats, dataset)
    five = sum(n for status, n in stats.statuses.items() if status >= 500)
    roles = Counter(p.role for p in participants)
    print(
        f"{args.workers} participants ({roles['writer']} writers, {roles['validator']} validators), "
        f"up to {args.tasks} tasks each, {seconds:.0f} s; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"server killed (SIGKILL, all processes) at {killed_at:.0f} s, answering again at {back_at:.0f} s")
    print(f"requests answered: {stats.requests}   5xx: {five}   statuses: {dict(sorted(stats.statuses.items()))}")
    print(f"requests that met a dead server (retried): {stats.connection_failures}")
    print(f"abandoned claims: {stats.abandoned}   double submits: {stats.double_submits}")
    print(
        f"saved per the answers: {len(stats.written)} writings ({3 * len(stats.written)} hypotheses), "
        f"{len(stats.labelled)} validation labels; in the database: {pair_count} pairs, {label_count} worker labels"
    )
    print(f"lost: {lost}   duplicated: {sum(duplicated.values())} {duplicated}")
    print("server-side time per page (gunicorn access log, both server lives):")
    print("\n".join(server_figures(access_log)))
    if args.drop:
        from django.db import connections

        connections.close_all()
        admin_sql(args.database_url, f'DROP DATABASE "{urlsplit(args.database_url).path.lstrip("/")}"')
    return 0 if lost == 0 and not sum(duplicated.values()) and five == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
