"""Artifact monitor and nudge benchmarks (run by hand; keep other work off the machine).

    .venv/bin/python bench/artifacts.py monitor [--sizes 43000,130000,433000] [--folds 5]
        a full monitor refresh (k-fold fit, per-genre/per-writer figures, final model) on synthetic
        pairs shaped like SNLI hypotheses: a Zipfian vocabulary of 20,000 words, 4-12 words a
        sentence, 10 genres, one writer per ~150 pairs, one planted writer. Ratios are against
        the smallest size (CPU seconds), measured in the same run. The database read is not included
        (`snli` below times a whole refresh from the database).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench .venv/bin/python bench/artifacts.py snli
        imports ../shared/data/snli_1.0_dev.jsonl (once), tags it, and prints the figures of the
        closing note: tag frequencies, give-away words per label, the monitor's cross-validated
        hypothesis-only accuracy against the majority class; then the scoring endpoint's latency
        (p50/p99 over 2,000 drafts, server side through Django's full stack) against the login
        page measured in the same run. Loads data into the database it is pointed at.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench .venv/bin/python bench/artifacts.py nudge \
            [--clients 4] [--seconds 20]
        the scoring endpoint (/artifacts/score/) under gunicorn (gunicorn.conf.py: gthread), server
        side: gunicorn's access log gives each request's time in the server (%(D)s, microseconds).
        `--clients` threads, each with its own worker account and a kept-alive connection, send a
        draft to score, then ask for the login page (a template, no query) and /favicon.ico (a
        redirect: Django's middleware and nothing else), the baselines of the same run. Needs SNLI
        dev and a monitor refresh in that database (made here when missing, as `snli` does).
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", ROOT.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"
LABELS = ("entailment", "neutral", "contradiction")


def synthetic_rows(n, seed=0, vocabulary=20000, per_writer=150):
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.3, size=n * 12), vocabulary) - 1
    lengths = rng.integers(4, 13, size=n)
    labels = rng.integers(0, 3, size=n)
    writers = n // per_writer
    rows, at = [], 0
    for i in range(n):
        words = [f"w{r}" for r in ranks[at : at + lengths[i]]]
        at += lengths[i]
        writer = i % writers
        if writer == 0 and labels[i] == 2:
            words.insert(1, "not")  # the planted writer
        rows.append(
            {"hypothesis": " ".join(words), "label": LABELS[labels[i]], "genre": f"g{i % 10}", "writer": writer}
        )
    return rows


def bench_monitor(sizes, folds):
    from artifacts.monitor import monitor

    base = None
    # CPU seconds beside wall seconds: on a shared machine the wall clock measures the neighbours.
    print(
        f"{'pairs':>8} {'seconds':>8} {'cpu s':>8} {'ratio':>6} {'pairs/s':>9} {'accuracy':>9} {'majority':>9} "
        f"{'flagged':>8}  planted writer (0): n, accuracy vs crowd, flagged, top contradiction word"
    )
    for n in sizes:
        rows = synthetic_rows(n)
        started, cpu_started = time.perf_counter(), time.process_time()
        figures, _ = monitor(rows, folds=folds)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        base = base or cpu
        o = figures["overall"]
        flagged = sum(w["flagged"] for w in figures["writers"])
        planted = next(w for w in figures["writers"] if w["writer"] == 0)
        top = (planted["giveaway_words"].get("contradiction") or [{"word": "-", "p": 0}])[0]
        print(
            f"{n:>8} {seconds:>8.1f} {cpu:>8.1f} {cpu / base:>6.2f} {n / cpu:>9.0f} {o['accuracy']:>9.4f} "
            f"{o['majority']:>9.4f} {flagged:>8}  {planted['n']}, {planted['accuracy']:.3f} vs "
            f"{planted['crowd_accuracy']:.3f}, {'FLAGGED' if planted['flagged'] else 'missed'}, "
            f"{top['word']} {top['p']:.2f}",
            flush=True,
        )


def bench_snli():
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from artifacts.monitoring import refresh_monitor
    from artifacts.selectors import giveaway_words_for, tag_figures
    from artifacts.services import get_tagger, run_tagging_job, start_tagging
    from corpus.models import Dataset, Worker
    from corpus.scope import Scope

    call_command("migrate", verbosity=0)
    if not Dataset.objects.filter(slug="snli").exists():
        call_command("import_pairs", str(SNLI_DEV), "--dataset", "snli", "--no-progress")
    snli = Dataset.objects.get(slug="snli")
    started = time.perf_counter()
    job = run_tagging_job(start_tagging(snli, queue=False).pk, tagger=get_tagger())
    print(f"tagging: {job.done} pairs in {time.perf_counter() - started:.1f} s ({job.tagger})")
    figures = tag_figures(Scope.of_dataset(snli))
    print(f"\nphenomenon tags over {figures['tagged']} pairs (share, most frequent gold)")
    for row in figures["tags"]:
        print(
            f"  {row['label']:<34} {row['share']:>6.1%}  {row['most_frequent_gold'] or '-':<13} "
            f"{(row['most_frequent_gold_share'] or 0):.0%}"
        )
    listing = giveaway_words_for(Scope.of_dataset(snli))
    print(f"\ngive-away words (min count {listing['min_count']}, {listing['hypotheses']} hypotheses with gold)")
    for label, words in listing["words"].items():
        print(f"  {label:<13} " + ", ".join(f"{w['word']} {w['p']:.2f} ({w['count']})" for w in words))
    started = time.perf_counter()
    refresh = refresh_monitor(snli, folds=5)
    o = refresh.overall
    print(
        f"\nmonitor: {refresh.pairs} pairs, {refresh.folds}-fold, {time.perf_counter() - started:.1f} s from the "
        f"database: hypothesis-only {o['accuracy']:.4f} (95% CI {o['ci_low']:.4f}-{o['ci_high']:.4f}) vs majority "
        f"({o['majority_label']}) {o['majority']:.4f}"
    )

    setup_test_environment()
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench-writer")
    Worker.objects.get_or_create(user=user)
    client = Client()
    client.force_login(user)
    drafts = [
        "A man is sleeping.",
        "Nobody is outside.",
        "The woman plays a guitar on the street.",
        "Two dogs are running through a field.",
        "A child is not eating.",
    ]

    def timed(call, repeat):
        times = []
        for i in range(repeat):
            t = time.perf_counter()
            response = call(i)
            times.append(1000 * (time.perf_counter() - t))
            assert response.status_code == 200, response.content
        times.sort()
        return statistics.median(times), times[int(0.99 * len(times)) - 1]

    login = timed(lambda i: Client().get("/accounts/login/"), 500)
    score = timed(
        lambda i: client.post(
            "/artifacts/score/",
            {"text": drafts[i % 5], "label": LABELS[i % 3], "dataset": "snli"},
            content_type="application/json",
        ),
        2000,
    )
    print(
        f"\nscoring endpoint: p50 {score[0]:.2f} ms, p99 {score[1]:.2f} ms "
        f"(login page p50 {login[0]:.2f} ms, p99 {login[1]:.2f} ms; ratio p99 {score[1] / login[1]:.2f})"
    )


def prepare_snli_monitor():
    """SNLI dev imported and its monitor refreshed once, in the database DATABASE_URL names."""
    import django

    django.setup()
    from django.core.management import call_command

    from artifacts.monitoring import refresh_monitor
    from artifacts.selectors import latest_refresh
    from corpus.models import Dataset
    from corpus.scope import Scope

    call_command("migrate", verbosity=0)
    if not Dataset.objects.filter(slug="snli").exists():
        call_command("import_pairs", str(SNLI_DEV), "--dataset", "snli", "--no-progress")
    snli = Dataset.objects.get(slug="snli")
    refresh = latest_refresh(Scope.of_dataset(snli)) or refresh_monitor(snli, folds=5)
    return snli, refresh


def bench_nudge(clients, seconds):
    import http.client
    import json
    import secrets
    import subprocess
    import tempfile
    import threading

    # As in production: DEBUG off (no query log), so a key of its own for this run.
    if not os.environ.get("DEBUG"):
        os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    _snli, refresh = prepare_snli_monitor()
    sys.path.insert(0, str(ROOT / "bench"))
    from gunicorn_pages import sessions_for

    cookies = sessions_for(clients)
    import socket

    with socket.socket() as probe:  # a free port: never time another server that happens to listen
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = Path(tempfile.mkdtemp()) / "access.log"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "annotation_site.wsgi",
            "-c",
            str(ROOT / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{port}",
            "--access-logfile",
            str(log),
            "--access-logformat",
            "%(U)s %(s)s %(D)s",
        ],
        cwd=ROOT,
        env={**os.environ, "ARTIFACTS_NUDGE_OUTSIDE_STUDIES": "true"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    drafts = [
        "A man is sleeping.",
        "Nobody is outside.",
        "The woman plays a guitar on the street.",
        "Two dogs are running through a field.",
        "A child is not eating.",
        "The people are outdoors.",
    ]
    csrf = "b" * 32  # an unmasked token: cookie and header agree
    errors: list[tuple[object, ...]] = []

    def client_loop(index, cookie, deadline):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        i = index
        while time.perf_counter() < deadline:
            i += 1
            body = json.dumps({"text": drafts[i % len(drafts)], "label": LABELS[i % 3], "dataset": "snli"})
            requests = (
                ("POST", "/artifacts/score/", body),
                ("GET", "/accounts/login/", None),
                ("GET", "/favicon.ico", None),
            )
            for method, path, data in requests:
                try:
                    connection.request(
                        method,
                        path,
                        body=data,
                        headers={
                            "Cookie": f"{cookie}; csrftoken={csrf}",
                            "X-CSRFToken": csrf,
                            "Content-Type": "application/json",
                        },
                    )
                    response = connection.getresponse()
                    content = response.read()
                    if response.status not in (200, 301):
                        errors.append((path, response.status, content[:200]))
                    elif path == "/artifacts/score/" and not json.loads(content).get("ready"):
                        errors.append((path, "not ready", content[:200]))
                except (OSError, http.client.HTTPException) as error:
                    errors.append((path, repr(error)))
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    try:
        for _ in range(150):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/favicon.ico")
                break
            except OSError:
                time.sleep(0.2)
        warm = time.perf_counter() + 2  # every gunicorn process loads the model once
        threads = [threading.Thread(target=client_loop, args=(i, c, warm)) for i, c in enumerate(cookies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.poll() is None, "gunicorn did not start"
        warm_bytes = log.stat().st_size  # the warm-up's lines are not counted
        deadline = time.perf_counter() + seconds
        threads = [threading.Thread(target=client_loop, args=(i, c, deadline)) for i, c in enumerate(cookies)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.terminate()
        server.wait(timeout=30)
    times: dict[str, list[float]] = {}
    with log.open("rb") as lines:
        lines.seek(warm_bytes)
        measured = lines.read().decode().splitlines()
    for line in measured:
        path, _status, micros = line.split()
        times.setdefault(path, []).append(int(micros) / 1000)
    print(
        f"scoring endpoint under gunicorn (gthread), {clients} clients, {seconds} s, monitor refresh "
        f"{refresh.pk} over {refresh.pairs} SNLI dev pairs; {len(errors)} errors {errors[:3]}"
    )
    print(f"load average {os.getloadavg()[0]:.2f}; server-side times from gunicorn's access log")
    base = None
    for path in ("/favicon.ico", "/accounts/login/", "/artifacts/score/"):
        values = sorted(times.get(path, []))
        if not values:
            print(f"  {path:<20} no requests")
            continue
        p50, p99 = statistics.median(values), values[max(0, int(0.99 * len(values)) - 1)]
        base = base or p99
        print(
            f"  {path:<20} {len(values):>6} requests  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
            f"p99 {p99 / base:5.2f}x the redirect's"
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["monitor", "snli", "nudge"])
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--sizes", default="43000,130000,433000")
    parser.add_argument("--folds", type=int, default=5)
    options = parser.parse_args()
    if options.what == "monitor":
        bench_monitor([int(n) for n in options.sizes.split(",")], options.folds)
    elif options.what == "nudge":
        bench_nudge(options.clients, options.seconds)
    else:
        bench_snli()


if __name__ == "__main__":
    main()
