"""Benchmark: claiming validation batches from a queue of 20,000 dev pairs, on a fresh database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/validation_claims.py
    .venv/bin/python bench/validation_claims.py      # no DATABASE_URL: under scripts/with_database.py

The fresh database is a throwaway one on that PostgreSQL server (bench_validation_claims_<pid>,
migrated, dropped at the end: bench/throwaway_database.py); BENCH_PAIRS sets the queue's size.

Baseline, measured in the same run: picking the candidates with one query ordered by
(label_count DESC, id), which has to filter and sort the whole queue. The platform's claim asks
once per label count so the database can stop after a batch's worth of rows.
"""

import os
import secrets
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import django  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from bench.throwaway_database import require_server, throwaway_database  # noqa: E402

PAIRS = int(os.environ.get("BENCH_PAIRS", "20000"))
ROUNDS = 40


def fill_queue():
    from django.contrib.auth.models import User

    from corpus.models import Pair, Premise, Worker
    from tests.validation.validation_factories import make_dataset

    dataset = make_dataset("bench")
    genre = dataset.premises.model._meta.get_field("genre").related_model.objects.get(slug="fiction")
    premises = Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, prompt_id=f"b{i}", text=f"premise {i}", text_hash=f"{i}", split="dev")
        for i in range(PAIRS)
    )
    Pair.objects.bulk_create(
        Pair(
            dataset=dataset,
            premise=p,
            pair_id=p.prompt_id,
            hypothesis="h",
            author_label="neutral",
            needs_validation=True,
            label_count=1,
            neutral_votes=1,
        )
        for p in premises
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return [Worker.objects.create(user=User.objects.create(username=f"bench{i}")) for i in range(2 * ROUNDS)]


def one_query_candidates(worker):
    from validation import selectors

    sql, params = selectors.candidate_statement(worker, timezone.now(), limit=15, lock=True)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [pk for pk, *_ in cursor.fetchall()]


def timed_each(function, workers):
    started = time.perf_counter()
    for worker in workers:
        function(worker)
    return (time.perf_counter() - started) / len(workers)


def main():
    require_server()
    with throwaway_database("validation_claims") as url:
        os.environ["DATABASE_URL"] = url
        django.setup()
        from validation.batch_claims import claim_validation_batch
        from validation.models import ValidationClaim
        from validation.services import submit_validation_batch

        workers = fill_queue()
        base = timed_each(one_query_candidates, workers[:ROUNDS])
        claim = timed_each(claim_validation_batch, workers[:ROUNDS])

        def submit(worker):
            batch = ValidationClaim.objects.filter(worker=worker).values_list("batch", flat=True).first()
            assert batch is not None, "the worker holds no batch"
            pairs = ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)
            submit_validation_batch(worker, batch, dict.fromkeys(pairs, "neutral"))

        submit_each = timed_each(submit, workers[:ROUNDS])
        both = timed_each(lambda w: (claim_validation_batch(w), submit(w)), workers[ROUNDS:])

    print(f"validation claims on PostgreSQL, {PAIRS} pairs in the queue, {ROUNDS} workers each")
    print(f"  baseline: one ordered candidate query     {base * 1000:8.1f} ms  1.00x")
    for name, seconds in (
        ("claim_validation_batch", claim),
        ("submit_validation_batch", submit_each),
        ("claim + submit", both),
    ):
        print(f"  {name:<40} {seconds * 1000:8.1f} ms  {seconds / base:5.2f}x")


if __name__ == "__main__":
    main()
