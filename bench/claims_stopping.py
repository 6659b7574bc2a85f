"""Claims and submits under the fixed and the decided stopping rule, at MultiNLI scale.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench \\
        .venv/bin/python bench/claims_live.py --stopping [--rounds 4] [--claims 150] [--concurrency 16]

Reuses bench/run.py's corpus: its 20k (at 433k pairs) queued train pairs, each with its author's
label. Each queued pair is given a five-label sequence of SNLI dev whose first label is its author
label (seeded by the pair id), and its k-th validator gives the sequence's k-th label, so pairs
agree and disagree as SNLI's do and the decided rule stops ~90% of them before the fifth label.

The rules run in the order fixed, decided, decided, fixed (so drift of the shared machine falls on
both alike); before each, the queue is put back as generated (labels past the author's deleted,
counters reset, live claims cleared) and the train split's rule set with
`corpus.stopping_policies.set_stopping_policy`. Each rule runs `--rounds` rounds: `--claims` fresh
validators claim a batch at once (`--concurrency` threads; pair claims/s, five pairs a batch), then
two thirds of them submit (batches/s), the rest leave their claims live, so live claims pile up.
Every rate is printed as a ratio against a one-row SELECT ... FOR UPDATE transaction at the same
concurrency, measured right before each round (the shared machine's load drifts within minutes). After the
claim phase of a round no submit is running, so a claim of that round on a pair stopped (or full)
now was a pair whose gold was settled when it was served: counted, must be 0. Also printed: the
statements of one claim and one submit, and EXPLAIN ANALYZE of the claim's candidate query with
the live claims of the last round.
"""

import json
import os
import random
import statistics
import threading
from collections import defaultdict
from pathlib import Path
from uuid import UUID

from claims_live import for_update_rate, load, reset_claims, run_threads, workers_pool

QUEUE_SPLIT = "train"
SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", "/work/shared/data")) / "snli_1.0_dev.jsonl"


def snli_sequences():
    """SNLI dev's five-label sequences by their first label."""
    by_first = defaultdict(list)
    with open(SNLI_DEV, encoding="utf-8") as handle:
        for line in handle:
            labels = json.loads(line).get("annotator_labels") or []
            if len(labels) == 5 and all(label in ("entailment", "neutral", "contradiction") for label in labels):
                by_first[labels[0]].append(labels)
    return by_first


def queue_ids(dataset):
    """The generated queue: train pairs that had only their author's label (bench/run.py)."""
    from corpus.models import Pair

    return list(
        Pair.objects.filter(dataset=dataset, premise__split=QUEUE_SPLIT, pk__lte=_queue_end(dataset))
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _queue_end(dataset):
    from corpus.models import Pair

    # bench/run.py numbers the 40k dev/test pairs first, then the 20k queued ones (per 433k).
    total = Pair.objects.filter(dataset=dataset).count()
    return round(60_000 * total / 433_000)


def reset_queue(ids):
    """The queue as bench/run.py left it: the author's label only, nothing stopped, no claims."""
    from django.db import connection

    reset_claims()
    low, high = min(ids), max(ids)
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM validation_validationlabel WHERE pair_id BETWEEN %s AND %s AND position > 1", [low, high]
        )
        cursor.execute(
            "UPDATE collection_pair SET label_count = 1, gold_label = '-', needs_validation = true, "
            "stopped_early = false, held_places = 0, "
            "entailment_votes = (author_label = 'entailment')::int, neutral_votes = (author_label = 'neutral')::int, "
            "contradiction_votes = (author_label = 'contradiction')::int WHERE id BETWEEN %s AND %s",
            [low, high],
        )
        cursor.execute("VACUUM ANALYZE collection_pair")
        cursor.execute("VACUUM ANALYZE validation_validationlabel")


def claim_sql_plan(worker, dataset):
    """EXPLAIN ANALYZE of the claim's candidate query (SELECT ... FOR UPDATE SKIP LOCKED), rolled back."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from validation.batch_claims import claim_validation_batch

    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        claim_validation_batch(worker, dataset=dataset)
        transaction.set_rollback(True)
    candidate = next(q["sql"] for q in queries.captured_queries if "SKIP LOCKED" in q["sql"])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + candidate)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return candidate, plan


def run(args):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from corpus.models import Dataset, Pair
    from corpus.stopping_policies import set_stopping_policy
    from validation.batch_claims import claim_validation_batch
    from validation.models import ValidationClaim
    from validation.services import submit_validation_batch

    dataset = Dataset.objects.get(slug="bench")
    ids = queue_ids(dataset)
    by_first = snli_sequences()
    authors = dict(Pair.objects.filter(pk__in=ids).values_list("pk", "author_label"))
    sequences = {pk: random.Random(pk).choice(by_first[authors[pk]]) for pk in ids}
    order = ["fixed", "decided", "decided", "fixed"]
    per_rule_workers = args.rounds * args.claims + 10
    pool = iter(workers_pool(len(order) * per_rule_workers + 20))
    rng = random.Random(24)
    sample = ids[:5000]
    print(
        f"claims and submits under stopping rules: {len(ids):,} queued pairs, {args.concurrency} threads, "
        f"{args.claims} claims a round, {args.submit_share:.0%} of them submitted  {load()}"
    )
    results: defaultdict[str, dict[str, list[float]]] = defaultdict(lambda: {"claim": [], "submit": []})
    plans = {}
    for rule in order:
        reset_queue(ids)
        set_stopping_policy(dataset, QUEUE_SPLIT, rule)
        given: defaultdict[int, int] = defaultdict(
            int
        )  # pair -> validator labels given so far (this process submits them all)
        lock = threading.Lock()
        before = for_update_rate(args, sample, rng)
        claim_rates, submit_rates, served_settled, no_task = [], [], 0, [0]
        for round_number in range(args.rounds):
            live = ValidationClaim.objects.filter(status="open").count()
            base = for_update_rate(args, sample, rng)  # right before the round: the load drifts
            workers = [next(pool) for _ in range(args.claims)]
            batches: dict[int, UUID] = {}

            def claim(worker, batches=batches, no_task=no_task):
                batch = claim_validation_batch(worker, dataset=dataset)
                if batch is None:
                    no_task[0] += 1
                else:
                    batches[worker.pk] = batch

            calls, seconds, errors = run_threads(args.concurrency, workers, claim)
            claim_rate = calls * 5 / seconds
            # No submit runs now: a claim of this round on a pair stopped or full was served settled.
            settled = (
                ValidationClaim.objects.filter(batch__in=list(batches.values()))
                .filter(pair__stopped_early=True)
                .count()
                + ValidationClaim.objects.filter(batch__in=list(batches.values()), pair__label_count__gte=5).count()
            )
            served_settled += settled
            submitting = [w for w in workers if w.pk in batches][: round(len(workers) * args.submit_share)]

            def submit(worker, batches=batches, given=given, lock=lock):
                pairs = list(ValidationClaim.objects.filter(batch=batches[worker.pk]).values_list("pair_id", flat=True))
                labels = {}
                with lock:
                    for pk in pairs:
                        given[pk] += 1
                        labels[pk] = sequences[pk][min(given[pk], 4)]
                submit_validation_batch(worker, batches[worker.pk], labels)

            submits, submit_seconds, submit_errors = run_threads(args.concurrency, submitting, submit)
            submit_rate = submits / submit_seconds
            claim_rates.append(claim_rate / base)
            submit_rates.append(submit_rate / base)
            stopped = Pair.objects.filter(pk__in=ids, stopped_early=True).count()
            print(
                f"  {rule:<8} round {round_number + 1}: {live:5,} live claims before; claims {claim_rate:7,.0f} "
                f"pair claims/s ({claim_rate / base:.3f}x), submits {submit_rate:6,.1f} batches/s "
                f"({submit_rate / base:.4f}x) vs FOR UPDATE {base:,.0f} txn/s; settled pairs served {settled}; "
                f"stopped so far {stopped:,}  {load()}  errors {len(errors) + len(submit_errors)} "
                f"{(errors + submit_errors)[:1]}"
            )
        after = for_update_rate(args, sample, rng)
        results[rule]["claim"] += claim_rates
        results[rule]["submit"] += submit_rates
        stopped = Pair.objects.filter(pk__in=ids, stopped_early=True).count()
        labelled = Pair.objects.filter(pk__in=ids, label_count__gt=1)
        print(
            f"  {rule}: FOR UPDATE before/after the rounds {before:,.0f} / {after:,.0f} txn/s; claim/base "
            f"{', '.join(f'{v:.3f}' for v in claim_rates)}; submit/base "
            f"{', '.join(f'{v:.4f}' for v in submit_rates)}; pairs labelled {labelled.count():,}, "
            f"stopped early {stopped:,}; settled pairs served {served_settled}; 'no task' {no_task[0]}"
        )
        if rule not in plans:
            worker = next(pool)
            sql, plan = claim_sql_plan(worker, dataset)
            worker = next(pool)
            with CaptureQueriesContext(connection) as claiming_queries:
                batch = claim_validation_batch(worker, dataset=dataset)
            if batch is None:
                raise RuntimeError("no pair left")
            claim_statements = len(claiming_queries)
            pairs = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
            with CaptureQueriesContext(connection) as submitting_queries:
                submit_validation_batch(worker, batch, dict.fromkeys(pairs, "entailment"))
            plans[rule] = (sql, plan, claim_statements, len(submitting_queries))

    print("\nratios to the same-run one-row FOR UPDATE baseline (median over rounds of both passes):")
    for rule in ("fixed", "decided"):
        claims, submits = results[rule]["claim"], results[rule]["submit"]
        print(
            f"  {rule:<8} pair claims/base median {statistics.median(claims):.3f} (min {min(claims):.3f}, "
            f"max {max(claims):.3f}); submits/base median {statistics.median(submits):.4f} "
            f"(min {min(submits):.4f}, max {max(submits):.4f})"
        )
    fixed, decided = results["fixed"], results["decided"]
    print(
        f"  decided / fixed: claims {statistics.median(decided['claim']) / statistics.median(fixed['claim']):.2f}, "
        f"submits {statistics.median(decided['submit']) / statistics.median(fixed['submit']):.2f}"
    )
    for rule, (sql, plan, claim_statements, submit_statements) in plans.items():
        print(f"\n-- {rule}: one claim {claim_statements} statements, one submit {submit_statements} statements")
        print(f"-- candidate query: {sql[:600]}")
        print(plan)
    reset_queue(ids)
    set_stopping_policy(dataset, QUEUE_SPLIT, "fixed")
    print(f"\nqueue reset, train split back on the fixed rule  {load()}")
