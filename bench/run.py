"""The one benchmark entry: a MultiNLI-shaped corpus at several sizes, every scale figure
as a ratio against a baseline measured in the same run.

    .venv/bin/python bench/run.py --scale multinli                         # 43k pairs, quick
    .venv/bin/python bench/run.py --scale multinli --sizes 43000,433000,1300000 --repeat 3
    options: --concurrency 16 (threads claiming at once)  --claims 300 (claims per measurement)
             --processes 8 (claims from forked processes as well, as gunicorn runs them)
             --skip export,pages (leave sections out)   --keep (reuse a corpus already generated)

It needs PostgreSQL and uses a database of its own (default postgres://postgres@127.0.0.1:5432/
nli_bench, or DATABASE_URL whose name contains "bench"); it is created if missing and its corpus
tables are emptied before each size. The corpus, per 433k pairs: ~144k written premises with
three pairs each, 50k premises still unwritten, ten genres (five held out for dev/test), 40k
dev/test pairs with five labels, a queue of 20k train pairs waiting for validation.

Every row prints min and median over `--repeat` runs and the ratio against its baseline:
  count(*)            a bare count of the label table          (statistics, recompute)
  pandas              labels read into pandas, gold + agreement computed there
  COPY                COPY of the same pairs with labels aggregated, to a file (export)
  FOR UPDATE txn      one-row SELECT ... FOR UPDATE transactions at the same concurrency (claims)
  static page         the login page rendered by Django in process (pages)
"""

import argparse
import io
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_bench"

TRAINING_GENRES = ["fiction", "government", "slate", "telephone", "travel"]
HELD_OUT_GENRES = ["facetoface", "letters", "nineeleven", "oup", "verbatim"]
LABELS = ["entailment", "neutral", "contradiction"]
DATASET = "bench"
MULTINLI_PAIRS = 433_000


def ensure_database():
    from urllib.parse import urlparse

    import psycopg2

    url = urlparse(os.environ["DATABASE_URL"])
    name = url.path.lstrip("/")
    admin = psycopg2.connect(
        host=url.hostname, port=url.port or 5432, user=url.username or "postgres", dbname="postgres"
    )
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
        if cursor.fetchone() is None:
            cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()


# --- the corpus -------------------------------------------------------------------------------


def _copy_text(value):
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    return str(value).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def copy_rows(cursor, table, columns, rows):
    buffer = io.StringIO()
    for row in rows:
        buffer.write("\t".join(_copy_text(value) for value in row))
        buffer.write("\n")
    buffer.seek(0)
    cursor.copy_expert(f"COPY {table} ({', '.join(columns)}) FROM STDIN", buffer)


def sentence(rng, words, length):
    text = " ".join(rng.choices(words, k=length)).capitalize() + "."
    if rng.random() < 0.01:
        text = f'He said "{text}"\tthen left.'  # quotes and tabs the TSV must carry
    return text


def generate(pairs_total, workers_needed, seed=2018):
    """A MultiNLI-shaped corpus, written with COPY; returns (seconds, label rows)."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from corpus.gold import gold_from_votes
    from corpus.models import Dataset, Genre, PromptFamily, Worker, text_hash

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    scale = pairs_total / MULTINLI_PAIRS
    validated_total = round(40_000 * scale)
    queued_total = round(20_000 * scale)
    unwritten_total = round(50_000 * scale)
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)] + ["the", "a", "man", "woman", "dog", "runs", "is", "not", "city"] * 50
    now = timezone.now().isoformat()
    # Pairs were written over a collection's weeks, not all in the last hour: the dashboard's
    # pairs-per-hour figure reads the last 48 hours, ~1/45 of the corpus here.
    collection_days = 90
    started_at = timezone.now() - timedelta(days=collection_days)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE validation_validationlabel, validation_validationclaim, collection_pair, "
            "collection_writingclaim, collection_premisereport, collection_premise, collection_worker, auth_user CASCADE"
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
        genre_ids = {}
        for slug in TRAINING_GENRES + HELD_OUT_GENRES:
            genre_row, _ = Genre.objects.get_or_create(
                slug=slug, defaults={"name": slug, "is_training": slug in TRAINING_GENRES, "family": family}
            )
            genre_ids[slug] = genre_row.pk
        dataset, _ = Dataset.objects.get_or_create(
            slug=DATASET, defaults={"name": "Bench corpus", "writings_per_premise": 1}
        )

        premises, pairs, labels = [], [], []
        pair_id = label_id = premise_id = 0
        while pair_id < pairs_total:
            premise_id += 1
            validated = pair_id < validated_total
            queued = not validated and pair_id < validated_total + queued_total
            if validated:
                split = "dev" if premise_id % 2 else "test"
                genre = (TRAINING_GENRES + HELD_OUT_GENRES)[premise_id % 10]
            else:
                split, genre = "train", TRAINING_GENRES[premise_id % 5]
            text = sentence(rng, words, rng.randint(8, 40))
            premises.append(
                (
                    premise_id,
                    dataset.pk,
                    genre_ids[genre],
                    f"{premise_id}",
                    text,
                    text_hash(text),
                    "",
                    "",
                    split,
                    "available",
                    1,
                    "bench",
                    now,
                )
            )
            for author_label in LABELS:
                if pair_id >= pairs_total:
                    break
                pair_id += 1
                row_labels = [author_label] + (
                    [rng.choice(LABELS) if rng.random() < 0.3 else author_label for _ in range(4)] if validated else []
                )
                votes = [row_labels.count(label) for label in LABELS]
                gold = gold_from_votes(votes[0], votes[1], votes[2]) if validated else "-"
                hypothesis = sentence(rng, words, rng.randint(4, 16))
                written_at = (started_at + timedelta(days=collection_days) * pair_id / pairs_total).isoformat()
                pairs.append(
                    (
                        pair_id,
                        dataset.pk,
                        premise_id,
                        f"{premise_id}{author_label[0]}",
                        hypothesis,
                        "",
                        "",
                        author_label,
                        written_at,
                        validated or queued,
                        len(row_labels),
                        *votes,
                        gold,
                        0,  # held_places: no live claims yet (the column has no database default)
                    )
                )
                for position, label in enumerate(row_labels, start=1):
                    label_id += 1
                    labels.append((label_id, pair_id, position, label, now))
            if len(pairs) >= 50_000:
                _flush(cursor, premises, pairs, labels)
        for _ in range(unwritten_total):
            premise_id += 1
            text = sentence(rng, words, rng.randint(8, 40))
            premises.append(
                (
                    premise_id,
                    dataset.pk,
                    genre_ids[TRAINING_GENRES[premise_id % 5]],
                    f"{premise_id}",
                    text,
                    text_hash(text),
                    "",
                    "",
                    "train",
                    "available",
                    0,
                    "bench",
                    now,
                )
            )
            if len(premises) >= 50_000:
                _flush(cursor, premises, pairs, labels)
        _flush(cursor, premises, pairs, labels)
        for table in ("collection_premise", "collection_pair", "validation_validationlabel"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
        users = User.objects.bulk_create(User(username=f"bench{i}") for i in range(workers_needed))
        Worker.objects.bulk_create(Worker(user=user) for user in users)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    _sync_maintained(dataset)
    return time.perf_counter() - started, label_id


def _sync_maintained(dataset):
    """Counters and aggregates that the platform keeps beside the rows, set from what COPY wrote."""
    from collection import hypothesis_tally
    from corpus import tallies

    tallies.check_and_rebuild()
    tallies.check_and_rebuild(None, hypothesis_tally.TALLY)  # the cost page's hypotheses per study


def _flush(cursor, premises, pairs, labels):
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
            "created_at",
            "needs_validation",
            "label_count",
            "entailment_votes",
            "neutral_votes",
            "contradiction_votes",
            "gold_label",
            "held_places",
        ],
        pairs,
    )
    copy_rows(cursor, "validation_validationlabel", ["id", "pair_id", "position", "label", "created_at"], labels)
    premises.clear()
    pairs.clear()
    labels.clear()


# --- timing helpers ---------------------------------------------------------------------------


def timed(function, repeat):
    """Seconds of each call; returns (min, median)."""
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - started)
    return min(seconds), statistics.median(seconds)


class Table:
    def __init__(self):
        self.rows = []

    def baseline(self, name, best, median, unit="ms"):
        self.rows.append((name, best, median, None, unit, True))
        return best

    def row(self, name, best, median, base, unit="ms", higher_is_better=False):
        ratio = (best / base) if base else float("nan")
        self.rows.append((name, best, median, ratio, unit, False, higher_is_better))

    def print(self, title):
        print(title)
        for row in self.rows:
            name, best, median, ratio, unit, is_base = row[:6]
            shown = (lambda v: f"{v * 1000:10.1f}") if unit == "ms" else (lambda v: f"{v:10,.0f}")
            tail = "   baseline" if is_base else f"   {ratio:7.2f}x"
            print(f"  {name:<66} best {shown(best)} {unit:<8} median {shown(median)}{tail}")
        self.rows = []


def run_threads(count, worker_items, function):
    """Run function(item) for each thread's items at once; returns (calls, seconds, errors)."""
    from django.db import connections

    errors = []
    done = [0]
    lock = threading.Lock()

    def body(items):
        try:
            for item in items:
                try:
                    function(item)
                    with lock:
                        done[0] += 1
                except Exception as error:
                    errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=(worker_items[i::count],)) for i in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0], time.perf_counter() - started, errors


def rate_rows(repeat, count, items_for_round, function):
    """(min, median) of calls per second over `repeat` rounds, and every error."""
    rates, errors = [], []
    for round_number in range(repeat):
        calls, seconds, round_errors = run_threads(count, items_for_round(round_number), function)
        rates.append(calls / seconds)
        errors += round_errors
    return max(rates), statistics.median(rates), errors


def _in_child(kind, dataset_pk, items, barrier):
    """One forked process's share of a claim round: load its rows, wait for the others, then time
    the claims alone. Returns (calls, start, end, errors, claimed premise or pair ids)."""
    from django.db import connection, transaction

    from collection.writing_claims import claim_next_premise
    from corpus.models import Dataset, Worker
    from validation.batch_claims import claim_validation_batch
    from validation.models import ValidationClaim

    dataset = Dataset.objects.get(pk=dataset_pk)
    workers: list[Any] = (  # pair pks for for_update, Workers for the claims
        list(Worker.objects.select_related("user").filter(pk__in=items)) if kind != "for_update" else items
    )
    barrier.wait()
    calls, errors, claimed = 0, [], []
    start = time.time()
    for item in workers:
        try:
            if kind == "for_update":
                with transaction.atomic(), connection.cursor() as cursor:
                    cursor.execute("SELECT id FROM collection_pair WHERE id = %s FOR UPDATE", [item])
                    cursor.fetchone()
            elif kind == "writing":
                claim = claim_next_premise(item, dataset=dataset)
                if claim is None:
                    raise RuntimeError("no premise left")
                claimed.append(claim.premise_id)
            else:
                batch = claim_validation_batch(item, dataset=dataset)
                if batch is None:
                    raise RuntimeError("no pair left")
                claimed.extend(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
            calls += 1
        except Exception as error:
            errors.append(repr(error))
    end = time.time()
    connection.close()
    return calls, start, end, errors, claimed


def run_processes(count, kind, dataset_pk, items):
    """Like run_threads, in `count` forked processes, as gunicorn serves requests: the processes do
    not share one interpreter lock, so the rate is the database's and not one Python's. Returns
    (calls per second from the first start to the last end, errors, claimed ids)."""
    import multiprocessing

    from django.db import connections

    connections.close_all()
    context = multiprocessing.get_context("fork")
    barrier = context.Manager().Barrier(count)
    with context.Pool(count) as pool:
        results = pool.starmap(_in_child, [(kind, dataset_pk, items[i::count], barrier) for i in range(count)])
    calls = sum(r[0] for r in results)
    seconds = max(r[2] for r in results) - min(r[1] for r in results)
    return calls / seconds, [e for r in results for e in r[3]], [c for r in results for c in r[4]]


def section_claims_processes(table, args, workers, dataset):
    """Claims from `--processes` forked processes against a one-row FOR UPDATE baseline measured the same way."""
    from corpus.models import Pair

    per_round = args.claims
    pair_ids = list(Pair.objects.values_list("pk", flat=True)[:20000])
    rng = random.Random(2)
    base = []
    for _ in range(args.repeat):
        rate, _, _ = run_processes(
            args.processes, "for_update", dataset.pk, [rng.choice(pair_ids) for _ in range(per_round)]
        )
        base.append(rate)
    table.baseline(
        f"one-row FOR UPDATE txn, {args.processes} processes (txn/s)", max(base), statistics.median(base), unit="/s"
    )
    for kind, name, per_claim in (("writing", "writing claim", 1), ("validation", "validation claim", 5)):
        rates, errors, claimed = [], [], []
        for _ in range(args.repeat):
            items = [next(workers).pk for _ in range(per_round)]
            rate, round_errors, round_claimed = run_processes(args.processes, kind, dataset.pk, items)
            rates.append(rate * per_claim)
            errors += round_errors
            claimed += round_claimed
        unit = "pair claims/s" if per_claim == 5 else "claims/s"
        table.row(
            f"{name}, {args.processes} processes ({unit})", max(rates), statistics.median(rates), max(base), unit="/s"
        )
        doubles = len(claimed) - len(set(claimed)) if kind == "writing" else 0
        print(
            f"    {name}s in processes: {len(claimed)} claimed, {doubles} double assignments, "
            f"{len(errors)} errors {errors[:2]}"
        )
    return workers


# --- the sections -----------------------------------------------------------------------------


def section_claims(table, args, workers, dataset):
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from collection.writing_claims import claim_next_premise
    from corpus.models import Pair, Premise
    from validation.batch_claims import claim_validation_batch
    from validation.models import ValidationClaim
    from validation.services import submit_validation_batch

    per_round = args.claims
    pair_ids = list(Pair.objects.values_list("pk", flat=True)[:20000])

    def one_row_for_update(pk):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT id FROM collection_pair WHERE id = %s FOR UPDATE", [pk])
            cursor.fetchone()

    rng = random.Random(1)
    base_best, base_median, _ = rate_rows(
        args.repeat, args.concurrency, lambda r: [rng.choice(pair_ids) for _ in range(per_round)], one_row_for_update
    )
    table.baseline(f"one-row FOR UPDATE txn, {args.concurrency} threads (txn/s)", base_best, base_median, unit="/s")

    pool = iter(workers)
    unwritten = Premise.objects.filter(dataset=dataset, writings_done=0).count()

    def writing_round(_):
        return [next(pool) for _ in range(per_round)]

    claimed = []

    def claim_premise(worker):
        claim = claim_next_premise(worker, dataset=dataset)
        if claim is None:
            raise RuntimeError("no premise left")
        claimed.append(claim.premise_id)

    best, median, errors = rate_rows(args.repeat, args.concurrency, writing_round, claim_premise)
    doubles = len(claimed) - len(set(claimed))
    table.row(
        f"writing claim, {args.concurrency} writers, {unwritten} unwritten premises (claims/s)",
        best,
        median,
        base_best,
        unit="/s",
    )
    print(f"    writing claims: {len(claimed)} claims, {doubles} double assignments, {len(errors)} errors {errors[:2]}")

    validators = [next(pool) for _ in range(per_round * args.repeat)]
    claimed_pairs: list[int] = []

    def claim_batch(worker):
        batch = claim_validation_batch(worker, dataset=dataset)
        if batch is None:
            raise RuntimeError("no pair left")
        claimed_pairs.extend(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))

    rounds = iter([validators[i * per_round : (i + 1) * per_round] for i in range(args.repeat)])
    best, median, errors = rate_rows(args.repeat, args.concurrency, lambda r: next(rounds), claim_batch)
    table.row(
        f"validation claim, {args.concurrency} validators (pair claims/s)", best * 5, median * 5, base_best, unit="/s"
    )
    print(f"    validation claims: {len(claimed_pairs)} pair claims, {len(errors)} errors {errors[:2]}")

    def submit(worker):
        claims = list(ValidationClaim.objects.filter(worker=worker, status="open").values_list("batch", "pair_id"))
        if claims:
            submit_validation_batch(worker, claims[0][0], {pair: "neutral" for _, pair in claims})

    rounds = iter([validators[i * per_round : (i + 1) * per_round] for i in range(args.repeat)])
    best, median, errors = rate_rows(args.repeat, args.concurrency, lambda r: next(rounds), submit)
    table.row(f"validation batch submit, {args.concurrency} validators (batches/s)", best, median, base_best, unit="/s")
    over = Pair.objects.filter(label_count__gt=5).count()
    print(f"    submits: {len(errors)} errors {errors[:2]}; pairs with more than five labels: {over}")

    # Statements of one claim and one submit, by a fresh worker.
    worker = next(pool)
    with CaptureQueriesContext(connection) as writing:
        claim_next_premise(worker, dataset=dataset)
    worker = next(pool)
    with CaptureQueriesContext(connection) as claiming:
        batch = claim_validation_batch(worker, dataset=dataset)
    if batch is None:
        raise RuntimeError("no pair left")
    pairs = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
    with CaptureQueriesContext(connection) as submitting:
        submit_validation_batch(worker, batch, dict.fromkeys(pairs, "entailment"))
    print(
        f"    statements: writing claim {len(writing)}, validation claim {len(claiming)}, batch submit {len(submitting)}"
    )
    return pool


def section_statistics(table, args, dataset):
    import pandas as pd
    from django.db import connection

    from corpus.agreement import agreement_stats, krippendorff_alpha
    from corpus.recompute import recompute_gold
    from corpus.scope import Scope

    def count_labels():
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM validation_validationlabel")
            cursor.fetchone()

    base, median = timed(count_labels, args.repeat)
    table.baseline("count(*) of the label table", base, median)

    def with_pandas():
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT l.pair_id, l.label, p.author_label, pr.genre_id FROM validation_validationlabel l "
                "JOIN collection_pair p ON p.id = l.pair_id JOIN collection_premise pr ON pr.id = p.premise_id"
            )
            frame = pd.DataFrame(cursor.fetchall(), columns=["pair", "label", "author", "genre"])
        votes = frame.pivot_table(index="pair", columns="label", aggfunc="size", fill_value=0)
        n = votes.sum(axis=1)
        five = votes[n == 5]
        gold = five.idxmax(axis=1).where(five.max(axis=1) >= 3, "-")
        per_genre = frame.drop_duplicates("pair").set_index("pair").loc[five.index, "genre"]
        matching = pd.Series([five.at[p, g] if g != "-" else 0 for p, g in gold.items()], index=gold.index)
        return gold.value_counts(), matching.groupby(per_genre).sum(), ((five**2).sum())

    pandas_best, pandas_median = timed(with_pandas, max(1, min(args.repeat, 2)))
    table.baseline("pandas: labels read, gold + agreement computed", pandas_best, pandas_median)
    best, median = timed(lambda: agreement_stats(Scope.named(DATASET), source="pairs"), args.repeat)
    table.row("before: agreement report grouped from every pair vs count(*)", best, median, base)
    best, median = timed(lambda: agreement_stats(Scope.named(DATASET)), args.repeat)
    table.row("gold counts + full agreement report  vs count(*)", best, median, base)
    table.row("gold counts + full agreement report  vs pandas", best, median, pandas_best)
    # α overall, per split and per genre from the tallies' vote histogram (one grouped read).
    best, median = timed(lambda: krippendorff_alpha(Scope.named(DATASET)), args.repeat)
    table.row("Krippendorff's alpha (overall/split/genre) vs count(*)", best, median, base)
    best, median = timed(lambda: krippendorff_alpha(Scope.named(DATASET), source="pairs"), args.repeat)
    table.row("before: alpha grouped from every pair vs count(*)", best, median, base)
    best, median = timed(lambda: recompute_gold(), max(1, min(args.repeat, 2)))
    table.row("recompute_gold (check + fix every pair) vs count(*)", best, median, base)


def section_export(table, args):
    from django.db import connection

    copy_sql = """
    COPY (
      SELECT p.gold_label, pr.binary_parse, p.binary_parse, pr.parse, p.parse, pr.text, p.hypothesis,
             pr.prompt_id, p.pair_id, g.slug,
             string_agg(l.label, ',' ORDER BY l.position) FILTER (WHERE l.excluded IS NOT TRUE)
      FROM collection_pair p
      JOIN collection_premise pr ON pr.id = p.premise_id
      JOIN collection_genre g ON g.id = pr.genre_id
      LEFT JOIN validation_validationlabel l ON l.pair_id = p.id
          WHERE p.dataset_id = (SELECT id FROM collection_dataset WHERE slug = %s)
      GROUP BY p.id, pr.id, g.id
      ORDER BY p.id
    ) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\t', HEADER)
    """
    from corpus.models import Pair

    pairs = Pair.objects.filter(dataset__slug=DATASET).count()
    with tempfile.TemporaryDirectory(prefix="nli-bench-run-") as tmp:

        def copy():
            with open(Path(tmp) / "copy.tsv", "wb", buffering=1 << 20) as out, connection.cursor() as cursor:
                cursor.copy_expert(cursor.mogrify(copy_sql, [DATASET]).decode(), out)

        copy_best, copy_median = timed(copy, args.repeat)
        table.baseline(
            "COPY of the same pairs, labels aggregated (pairs/s)", pairs / copy_best, pairs / copy_median, unit="/s"
        )
        results = []
        for attempt in range(max(1, min(args.repeat, 2))):
            child = subprocess.run(
                [
                    sys.executable,
                    str(REPO / "bench" / "export.py"),
                    "--child-export",
                    str(Path(tmp) / f"snapshots{attempt}"),
                ],
                check=True,
                capture_output=True,
                text=True,
                env=os.environ,
            )
            results.append(json.loads(child.stdout.strip().splitlines()[-1]))
    rates = sorted(r["rows"] / r["seconds"] for r in results)
    table.row(
        "export JSONL + TSV, every split (pairs/s)",
        rates[-1],
        statistics.median(rates),
        pairs / copy_best,
        unit="/s",
        higher_is_better=True,
    )
    print(
        f"    export peak memory {max(r['peak_rss_mib'] for r in results):.0f} MiB, {results[0]['bytes'] / 2**20:.0f} MiB written, content hash {results[0]['content_hash'][:16]}"
    )


def section_pages(table, args, pool, dataset):
    from django.contrib.auth.models import User
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    setup_test_environment()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["*"]
    settings.NLI["DEFAULT_DATASET"] = DATASET
    anonymous = Client()
    base, median = timed(lambda: anonymous.get("/accounts/login/"), args.repeat * 3)
    table.baseline("static page (login form, in process)", base, median)

    worker = next(pool)
    client = Client()
    client.force_login(worker.user)
    client.get("/write/next/")

    def writing_page():
        response = client.get("/write/next/", follow=True)
        assert response.status_code == 200, response.status_code

    best, median = timed(writing_page, args.repeat * 3)
    with CaptureQueriesContext(connection) as queries:
        writing_page()
    table.row(f"writing page (arrival, {len(queries)} statements)", best, median, base)

    validator = next(pool)
    client = Client()
    client.force_login(validator.user)

    def validation_page():
        response = client.get("/validate/next/", follow=True)
        assert response.status_code == 200, response.status_code

    best, median = timed(validation_page, args.repeat * 3)
    with CaptureQueriesContext(connection) as queries:
        validation_page()
    table.row(f"validation page ({len(queries)} statements)", best, median, base)

    # "Cold" is the figure cache's state: a server process has imported matplotlib long before.
    from dashboard import plots

    plots._matplotlib()
    researcher = User.objects.create_superuser(f"bench-researcher-{time.time_ns()}", password="x")
    client = Client()
    client.force_login(researcher)
    for name, url in (
        ("dashboard: collection, cold", f"/dashboard/?dataset={DATASET}"),
        ("dashboard: validation, cold", f"/dashboard/validation/?dataset={DATASET}"),
        ("dashboard: corpus, cold", f"/dashboard/corpus/?dataset={DATASET}"),
        ("admin: pair search, cold", "/admin/corpus/pair/?q=dog"),
        ("admin: pair search for a rare word, cold", "/admin/corpus/pair/?q=w4321"),
    ):

        def page(url=url):
            cache.clear()
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        best, median = timed(page, args.repeat)
        table.row(name, best, median, base)
    table.print(f"pages at {args.current_size:,} pairs (server side, in process)")
    _before_rows(table, args, base)


def _before_rows(table, args, base):
    """What the pages computed before the maintained aggregates and the trigram search, timed in the
    same run: the scans the collection and corpus figures took, and Django's own admin search."""
    from django.contrib import admin
    from django.db.models import Count
    from django.test import RequestFactory

    from corpus.admin_pairs import SEARCH_COUNT_CAP
    from corpus.models import Pair
    from corpus.scope import Scope
    from corpus.selectors import pairs_in, premises_in
    from corpus.tallies import spaced_word_count_sql

    def collection_scan():
        list(
            premises_in(Scope.named(DATASET))
            .values("genre__slug", "genre__name", "genre__is_training", "split")
            .annotate(premises=Count("id", distinct=True), pair_count=Count("pairs"))
            .order_by("genre__slug", "split")
        )

    def corpus_scan():
        list(
            premises_in(Scope.named(DATASET))
            .annotate(words=spaced_word_count_sql("text"))
            .values_list("genre__slug", "genre__name", "words")
            .annotate(n=Count("id"))
            .order_by()
        )
        list(
            pairs_in(Scope.named(DATASET))
            .annotate(words=spaced_word_count_sql("hypothesis"))
            .values_list("words", "gold_label", "author_label")
            .annotate(n=Count("id"))
            .order_by()
        )

    pair_admin = admin.site._registry[Pair]

    def search(method, term="dog", count=lambda queryset: queryset.count()):
        request = RequestFactory().get("/admin/corpus/pair/", {"q": term})
        queryset, _ = method(request, Pair.objects.order_by("-id"), term)
        count(queryset)
        list(queryset[:50])

    def capped(queryset):  # as the admin's paginator counts a search now
        return queryset[:SEARCH_COUNT_CAP].count()

    for name, function in (
        ("before: collection figures by scanning premises and pairs", collection_scan),
        ("before: corpus figures (lengths, labels) by scanning", corpus_scan),
        (
            "before: admin pair search, Django's LIKE on every row",
            lambda: search(lambda *a: admin.ModelAdmin.get_search_results(pair_admin, *a)),
        ),
        (
            "admin pair search query (common word: pair by pair)",
            lambda: search(pair_admin.get_search_results, count=capped),
        ),
        (
            "before: rare word, Django's LIKE on every row",
            lambda: search(lambda *a: admin.ModelAdmin.get_search_results(pair_admin, *a), "w4321"),
        ),
        ("rare word, trigram indexes", lambda: search(pair_admin.get_search_results, "w4321", count=capped)),
    ):
        best, median = timed(function, args.repeat)
        table.row(name, best, median, base)
    table.print("before and after, the same figures (server side, in process)")
    command_startup(table, args)


def command_startup(table, args):
    """A data command's start: every system check (before) against the models' only (now)."""
    code = (
        f"import os, sys, time; sys.path.insert(0, {str(REPO)!r}); os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
        "'annotation_site.settings'); import django; django.setup(); from django.core.management import call_command; "
        "from corpus.management.commands import fold_tallies; all_checks = sys.argv[1] == 'all'; "
        "fold_tallies.Command.requires_system_checks = '__all__' if all_checks else fold_tallies.Command.requires_system_checks; "
        "call_command('fold_tallies', skip_checks=False)"
    )

    def start(which):
        subprocess.run([sys.executable, "-c", code, which], check=True, capture_output=True, env=os.environ)

    repeat = max(3, args.repeat)  # a process start is noisy on a shared machine
    base, median = timed(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), repeat)
    table.baseline("python starts (no Django)", base, median)
    best, median = timed(lambda: start("all"), repeat)
    table.row("before: data command with every system check", best, median, base)
    best, median = timed(lambda: start("models"), repeat)
    table.row("data command with the models' checks only", best, median, base)
    table.print("management commands")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", choices=["multinli"], default="multinli")
    parser.add_argument(
        "--sizes", default="43000", help="pairs per corpus, comma separated (43000,130000,433000,1300000)"
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--claims", type=int, default=200, help="claims per measured round")
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="also claim from this many forked processes (as gunicorn runs requests)",
    )
    parser.add_argument(
        "--skip", default="", help="sections to leave out: claims,statistics,export,pages,claims_live,recompute"
    )
    parser.add_argument("--keep", action="store_true", help="reuse the corpus already in the database (one size)")
    parser.add_argument(
        "--build", choices=["copy", "importers"], default="copy", help="importers: bench/import_corpus.py"
    )
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    ensure_database()
    import dashboard_pages  # bench/, beside this file
    import django
    import import_corpus

    django.setup()
    from django.conf import settings
    from django.db import connection

    from corpus.models import Dataset, Worker

    if "bench" not in connection.settings_dict["NAME"]:
        sys.exit("bench/run.py needs a PostgreSQL database whose name contains 'bench'")
    settings.CONN_MAX_AGE = 0
    workers_needed = args.claims * args.repeat * (4 if args.processes else 2) + 50
    for size in [int(s) for s in args.sizes.split(",")]:
        if not args.keep and args.build == "importers":  # files through import_pairs, tags included
            print(f"\n== {size:,} pairs imported: {json.dumps(import_corpus.build(size, workers_needed))}")
        elif not args.keep:
            seconds, label_rows = generate(size, workers_needed)
            print(f"\n== {size:,} pairs, {label_rows:,} labels: generated in {seconds:.1f} s")
        dataset = Dataset.objects.get(slug=DATASET)
        pool = iter(list(Worker.objects.select_related("user").order_by("pk")))
        table = Table()
        if "statistics" not in skip:
            section_statistics(table, args, dataset)
            table.print(f"statistics at {size:,} pairs")
        if "export" not in skip:
            section_export(table, args)
            table.print(f"export at {size:,} pairs")
        if "claims" not in skip:
            pool = section_claims(table, args, pool, dataset)
            table.print(f"claims at {size:,} pairs, {args.concurrency} threads in one process")
            if args.processes:
                pool = section_claims_processes(table, args, pool, dataset)
                table.print(f"claims at {size:,} pairs, {args.processes} processes")
        if "claims_live" not in skip:  # claims while claims are live, rounds on end
            import claims_live

            claims_live.run(argparse.Namespace(rounds=4, claims=min(args.claims, 150), concurrency=args.concurrency))
        if "recompute" not in skip:  # nothing to fix, every pair to fix, a submit's wait
            import recompute

            recompute.run(argparse.Namespace(repeat=max(1, min(args.repeat, 2)), skip=set(), no_vacuum=False))
        if "pages" not in skip:
            args.current_size = size
            section_pages(table, args, pool, dataset)
            dashboard_pages.section(table, args)  # every dashboard page, cold


if __name__ == "__main__":
    main()
