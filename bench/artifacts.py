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
        words = [f"w{r}" for r in ranks[at:at + lengths[i]]]
        at += lengths[i]
        writer = i % writers
        if writer == 0 and labels[i] == 2:
            words.insert(1, "not")  # the planted writer
        rows.append({"hypothesis": " ".join(words), "label": LABELS[labels[i]], "genre": f"g{i % 10}",
                     "writer": writer})
    return rows


def bench_monitor(sizes, folds):
    from artifacts.monitor import monitor

    base = None
    # CPU seconds beside wall seconds: on a shared machine the wall clock measures the neighbours.
    print(f"{'pairs':>8} {'seconds':>8} {'cpu s':>8} {'ratio':>6} {'pairs/s':>9} {'accuracy':>9} {'majority':>9} "
          f"{'flagged':>8}  planted writer (0): n, accuracy vs crowd, flagged, top contradiction word")
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
        print(f"{n:>8} {seconds:>8.1f} {cpu:>8.1f} {cpu / base:>6.2f} {n / cpu:>9.0f} {o['accuracy']:>9.4f} "
              f"{o['majority']:>9.4f} {flagged:>8}  {planted['n']}, {planted['accuracy']:.3f} vs "
              f"{planted['crowd_accuracy']:.3f}, {'FLAGGED' if planted['flagged'] else 'missed'}, "
              f"{top['word']} {top['p']:.2f}", flush=True)


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

    call_command("migrate", verbosity=0)
    if not Dataset.objects.filter(slug="snli").exists():
        call_command("import_pairs", str(SNLI_DEV), "--dataset", "snli", "--no-progress")
    snli = Dataset.objects.get(slug="snli")
    started = time.perf_counter()
    job = run_tagging_job(start_tagging(snli, queue=False).pk, tagger=get_tagger())
    print(f"tagging: {job.done} pairs in {time.perf_counter() - started:.1f} s ({job.tagger})")
    figures = tag_figures(snli)
    print(f"\nphenomenon tags over {figures['tagged']} pairs (share, most frequent gold)")
    for row in figures["tags"]:
        print(f"  {row['label']:<34} {row['share']:>6.1%}  {row['most_frequent_gold'] or '-':<13} "
              f"{(row['most_frequent_gold_share'] or 0):.0%}")
    listing = giveaway_words_for(snli)
    print(f"\ngive-away words (min count {listing['min_count']}, {listing['hypotheses']} hypotheses with gold)")
    for label, words in listing["words"].items():
        print(f"  {label:<13} " + ", ".join(f"{w['word']} {w['p']:.2f} ({w['count']})" for w in words))
    started = time.perf_counter()
    refresh = refresh_monitor(snli, folds=5)
    o = refresh.overall
    print(f"\nmonitor: {refresh.pairs} pairs, {refresh.folds}-fold, {time.perf_counter() - started:.1f} s from the "
          f"database: hypothesis-only {o['accuracy']:.4f} (95% CI {o['ci_low']:.4f}-{o['ci_high']:.4f}) vs majority "
          f"({o['majority_label']}) {o['majority']:.4f}")

    setup_test_environment()
    from django.contrib.auth.models import User

    user, _ = User.objects.get_or_create(username="bench-writer")
    Worker.objects.get_or_create(user=user)
    client = Client()
    client.force_login(user)
    drafts = ["A man is sleeping.", "Nobody is outside.", "The woman plays a guitar on the street.",
              "Two dogs are running through a field.", "A child is not eating."]

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
    score = timed(lambda i: client.post("/artifacts/score/", {"text": drafts[i % 5], "label": LABELS[i % 3],
                                                             "dataset": "snli"}, content_type="application/json"),
                  2000)
    print(f"\nscoring endpoint: p50 {score[0]:.2f} ms, p99 {score[1]:.2f} ms "
          f"(login page p50 {login[0]:.2f} ms, p99 {login[1]:.2f} ms; ratio p99 {score[1] / login[1]:.2f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["monitor", "snli"])
    parser.add_argument("--sizes", default="43000,130000,433000")
    parser.add_argument("--folds", type=int, default=5)
    options = parser.parse_args()
    if options.what == "monitor":
        bench_monitor([int(n) for n in options.sizes.split(",")], options.folds)
    else:
        bench_snli()


if __name__ == "__main__":
    main()
