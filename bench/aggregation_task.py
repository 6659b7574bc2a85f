"""Benchmark: a Dawid–Skene aggregation run through its Celery task at 40,000 five-label pairs.

    .venv/bin/python bench/aggregation_task.py                 # 40,000 pairs, 200 workers, 10% guessers
    options: --pairs 40000  --mace (also time a Dawid–Skene + MACE run)  --keep (leave the database)

Needs PostgreSQL and a database of its own (default postgres://postgres@127.0.0.1:5432/
nli_qt_bench, or DATABASE_URL whose name contains "bench"); it is created if missing, emptied
first, and dropped at the end unless --keep.

1. Plants the crowd of bench/quality_simulation.py (200 workers: honest of varied skill, 10%
   random guessers, 5% same-label, 5% too fast) and writes its collection with COPY: premises,
   pairs with their counters and majority-vote gold, five labels per pair with their workers.
2. Baseline: crowd-kit's Dawid–Skene (quality.aggregation.dawid_skene) on the same labels already
   in memory, i.e. the model alone.
3. The run as the dashboard starts it: request_aggregation -> on commit, enqueue by name
   ("quality.aggregate_labels", inline: no broker) -> read the counted labels from the
   database, fit, write 40,000 AggregatedLabel and 200 WorkerEstimate rows in one transaction.
   Prints wall time, the stages, the ratio against the baseline, and the accuracy of the
   majority vote and of the run's label against the planted truth.
"""

import argparse
import os
import secrets
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_qt_bench"
os.environ.pop("CELERY_BROKER_URL", None)  # the task runs in this process, as the embedded mode does
os.environ["EMBEDDED_TASKS"] = "inline"
os.environ.setdefault("DEBUG", "1")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import numpy as np  # noqa: E402
from quality_simulation import LABELS, N_WORKERS, SEED, as_crowd_kit_frame, collect, plant_crowd  # noqa: E402
from run import copy_rows, ensure_database  # noqa: E402


def build(pairs_total):
    """The planted collection in the database; returns (dataset, crowd, collection, seconds)."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from corpus.gold import gold_from_votes
    from corpus.models import Dataset, Genre, PromptFamily, Worker, text_hash

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    rng = np.random.default_rng([SEED, 40])
    crowd = plant_crowd(rng, 0.10)
    collection = collect(rng, crowd, pairs_total)
    now = timezone.now().isoformat()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE validation_validationlabel, collection_pair, collection_premise, collection_worker, "
            "auth_user, quality_aggregationrun CASCADE"
        )
        family, _ = PromptFamily.objects.get_or_create(
            slug="bench",
            defaults={
                "name": "Bench",
                "instructions": "-",
                "entailment_prompt": "-",
                "neutral_prompt": "-",
                "contradiction_prompt": "-",
            },
        )
        genre, _ = Genre.objects.get_or_create(
            slug="fiction", defaults={"name": "fiction", "is_training": True, "family": family}
        )
        dataset, _ = Dataset.objects.get_or_create(slug="aggregation-bench", defaults={"name": "Aggregation bench"})
        users = User.objects.bulk_create(User(username=name) for name in crowd.names)
        workers = Worker.objects.bulk_create(
            Worker(user=user, market="prolific", external_id=user.username) for user in users
        )
        worker_ids = np.array([worker.pk for worker in workers])
        premises, pairs, labels = [], [], []
        label_id = 0
        for index in range(pairs_total):
            premise_id = index + 1  # one pair per premise: the planted authors repeat
            text = f"Premise {premise_id} of the aggregation bench."
            premises.append(
                (
                    premise_id,
                    dataset.pk,
                    genre.pk,
                    str(premise_id),
                    text,
                    text_hash(text),
                    "",
                    "",
                    "dev",
                    "available",
                    1,
                    "bench",
                    now,
                )
            )
            row = [LABELS[value] for value in collection.labels[index]]
            votes = [row.count(label) for label in LABELS]
            author = row[0]
            pairs.append(
                (
                    index + 1,
                    dataset.pk,
                    premise_id,
                    f"{premise_id}{author[0]}{index}",
                    f"Hypothesis {index}.",
                    "",
                    "",
                    author,
                    int(worker_ids[collection.workers[index, 0]]),
                    now,
                    True,
                    5,
                    *votes,
                    gold_from_votes(votes[0], votes[1], votes[2]),
                )
            )
            for position in range(5):
                label_id += 1
                seconds = collection.seconds[index, position]
                labels.append(
                    (
                        label_id,
                        index + 1,
                        int(worker_ids[collection.workers[index, position]]),
                        position + 1,
                        row[position],
                        None if np.isnan(seconds) else float(seconds),
                        now,
                    )
                )
        copy_rows(
            cursor,
            "collection_premise",
            [
                "id",
                "dataset_id",
                "genre_id",
                "prompt_id",
                "text",
                "text_hash",
                "parse",
                "binary_parse",
                "split",
                "status",
                "writings_done",
                "source",
                "created_at",
            ],
            premises,
        )
        copy_rows(
            cursor,
            "collection_pair",
            [
                "id",
                "dataset_id",
                "premise_id",
                "pair_id",
                "hypothesis",
                "parse",
                "binary_parse",
                "author_label",
                "author_id",
                "created_at",
                "needs_validation",
                "label_count",
                "entailment_votes",
                "neutral_votes",
                "contradiction_votes",
                "gold_label",
            ],
            pairs,
        )
        copy_rows(
            cursor,
            "validation_validationlabel",
            ["id", "pair_id", "worker_id", "position", "label", "seconds", "created_at"],
            labels,
        )
        for table in ("collection_premise", "collection_pair", "validation_validationlabel"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return dataset, crowd, collection, time.perf_counter() - started


def timed_run(dataset, methods):
    from quality.aggregation_runs import request_aggregation
    from quality.models import AggregationRun

    started = time.perf_counter()
    run = request_aggregation(None, dataset, methods)  # queued on commit, run inline
    wall = time.perf_counter() - started
    run = AggregationRun.objects.get(pk=run.pk)
    assert run.status == "done", run.error
    return run, wall


def drop_database():
    from urllib.parse import urlparse

    import psycopg2
    from django.db import connections

    connections.close_all()
    url = urlparse(os.environ["DATABASE_URL"])
    admin = psycopg2.connect(
        host=url.hostname, port=url.port or 5432, user=url.username or "postgres", dbname="postgres"
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{url.path.lstrip("/")}"')
    admin.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=40_000)
    parser.add_argument("--mace", action="store_true", help="also time a Dawid–Skene + MACE run")
    parser.add_argument("--keep", action="store_true", help="leave the bench database")
    args = parser.parse_args()
    ensure_database()
    import django

    django.setup()
    from quality.aggregation import dawid_skene
    from quality.models import AggregatedLabel

    dataset, crowd, collection, build_seconds = build(args.pairs)
    frame = as_crowd_kit_frame(crowd, collection)
    print(
        f"{args.pairs:,} pairs x 5 labels = {len(frame):,} labels, {N_WORKERS} workers (10% guessers); "
        f"written with COPY in {build_seconds:.1f} s"
    )
    print(f"load average before: {' '.join(f'{value:.2f}' for value in os.getloadavg())} on {os.cpu_count()} cores")

    started = time.perf_counter()
    dawid_skene(frame)
    baseline = time.perf_counter() - started
    print(f"{'baseline: crowd-kit Dawid–Skene on the labels in memory':<62}{baseline:7.1f} s   1.00x")
    rows = [("dawid_skene",)] + ([("dawid_skene", "mace")] if args.mace else [])
    for methods in rows:
        run, wall = timed_run(dataset, list(methods))
        timing = run.figures.get("timing", {})
        fits = ", ".join(
            [f"read {timing.get('read_seconds', 0):.1f} s"]
            + [f"{name} fit {run.figures[name]['seconds']:.1f} s" for name in run.methods]
            + [f"write {timing.get('write_seconds', 0):.1f} s"]
        )
        print(
            f"{'task quality.aggregate_labels: ' + ' + '.join(methods):<62}{wall:7.1f} s  {wall / baseline:5.2f}x   ({fits})"
        )
    # Accuracy against the planted truth (the last run's Dawid–Skene), beside the majority vote's.
    truth = {index + 1: LABELS[value] for index, value in enumerate(collection.true_labels)}
    results = dict(AggregatedLabel.objects.filter(run=run, method="dawid_skene").values_list("pair_id", "label"))
    from corpus.models import Pair

    gold = dict(Pair.objects.filter(dataset=dataset).values_list("pk", "gold_label"))
    accuracy = sum(results[pk] == label for pk, label in truth.items()) / len(truth)
    majority = sum(gold[pk] == label for pk, label in truth.items()) / len(truth)
    print(
        f"accuracy against the planted truth: majority vote {majority:.3f} ('-' counted wrong), Dawid–Skene {accuracy:.3f}"
    )
    print(f"load average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    if not args.keep:
        drop_database()


if __name__ == "__main__":
    main()
