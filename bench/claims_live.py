"""Claims while other claims are live and unsubmitted: round after round of fresh
workers claim and never submit, so the live claims pile up as they do while people work.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_claims \\
        nice -n 10 .venv/bin/python bench/claims_live.py [--rounds 4] [--claims 150] [--concurrency 16]

Reuses the corpus that `bench/run.py` built in that database (its claims are deleted first).
Each round prints claims per second against a one-row SELECT ... FOR UPDATE transaction at the
same concurrency, measured in the same run (before the first round and again after the last),
the live claims it started with, and the load average (1 min): the machine is shared. A claim
that answers "no task" while claimable work remains is counted and printed.

`--cpu N`: instead of the rounds, N claims of each kind one at a time in this process
(fresh workers), with the CPU time (`time.process_time`) and the statements of one claim.

`--stopping` (bench/claims_stopping.py): validators claim AND submit, with SNLI dev's
five-label sequences, under the fixed and the decided stopping rule in turn.
"""

import os
import random
import secrets
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def load():
    return f"load {os.getloadavg()[0]:.2f}"


def run_threads(count, items, function):
    """function(item) for every item from `count` threads at once; returns (calls, seconds, errors)."""
    from django.db import connections

    errors, done, lock = [], [0], threading.Lock()

    def body(share):
        try:
            for item in share:
                try:
                    function(item)
                    with lock:
                        done[0] += 1
                except Exception as error:
                    errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=body, args=(items[i::count],)) for i in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0], time.perf_counter() - started, errors


def for_update_rate(args, pair_ids, rng):
    from django.db import connection, transaction

    def one_row_for_update(pk):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT id FROM collection_pair WHERE id = %s FOR UPDATE", [pk])
            cursor.fetchone()

    rates = []
    for _ in range(3):
        calls, seconds, _ = run_threads(
            args.concurrency, [rng.choice(pair_ids) for _ in range(args.claims)], one_row_for_update
        )
        rates.append(calls / seconds)
    return max(rates)


def workers_pool(needed):
    from django.contrib.auth.models import User

    from corpus.models import Worker

    have = Worker.objects.count()
    if have < needed:
        stamp = int(time.time())
        users = User.objects.bulk_create(User(username=f"live{stamp}-{i}") for i in range(needed - have))
        Worker.objects.bulk_create(Worker(user=user) for user in users)
    return list(Worker.objects.select_related("user").order_by("pk"))


def reset_claims():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE validation_validationclaim, collection_writingclaim CASCADE")  # adversarial tasks too
        cursor.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'collection_pair' AND column_name = 'held_places'"
        )
        if cursor.fetchone():
            cursor.execute("UPDATE collection_pair SET held_places = 0 WHERE held_places <> 0")
        cursor.execute("VACUUM ANALYZE validation_validationclaim")
        cursor.execute("VACUUM ANALYZE collection_writingclaim")


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--claims", type=int, default=150, help="claims per round (each a fresh worker)")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--skip", default="", help="writing,validation")
    parser.add_argument(
        "--stopping",
        action="store_true",
        help="validators claim and submit (SNLI dev label sequences), fixed vs decided rule",
    )
    parser.add_argument("--cpu", type=int, default=0, help="CPU per claim of N claims one at a time")
    parser.add_argument("--submit-share", type=float, default=2 / 3, help="--stopping: validators who submit")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if "bench" not in os.environ.get("DATABASE_URL", ""):
        sys.exit("set DATABASE_URL to a PostgreSQL database whose name contains 'bench' (built by bench/run.py)")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    import django

    django.setup()
    from django.conf import settings

    settings.CONN_MAX_AGE = 0
    if args.stopping:
        import claims_stopping  # bench/, beside this file

        claims_stopping.run(args)
        return
    if args.cpu:
        cpu_per_claim(args.cpu, skip)
        return
    run(args, skip)


def cpu_per_claim(count, skip=()):
    """`count` claims of each kind one after another, each by a fresh worker: the process's CPU time
    per claim and the statements of one claim (savepoints and BEGIN/COMMIT included)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from collection.writing_claims import claim_next_premise
    from corpus.models import Dataset
    from validation.batch_claims import claim_validation_batch

    dataset = Dataset.objects.get(slug="bench")
    kinds = {
        "writing": lambda worker: claim_next_premise(worker, dataset=dataset),
        "validation": lambda worker: claim_validation_batch(worker, dataset=dataset),
    }
    for kind, claim in kinds.items():
        if kind in skip:
            continue
        reset_claims()
        workers = workers_pool(count + 60)[-(count + 1) :]
        claim(workers[0])  # warm
        with CaptureQueriesContext(connection) as statements:
            claim(workers[1])
        started = time.process_time()
        for worker in workers[2:]:
            claim(worker)
        per_claim = (time.process_time() - started) / (count - 1) * 1000
        print(
            f"  {kind} claim: {per_claim:.2f} ms CPU a claim ({count - 1} claims), {len(statements)} statements  {load()}"
        )
    reset_claims()


def run(args, skip=()):
    """The rounds (Django set up, the bench corpus in the database): `args` has rounds, claims, concurrency."""
    from collection.writing_claims import claim_next_premise
    from corpus.models import Dataset, Pair
    from validation.batch_claims import claim_validation_batch
    from validation.models import ValidationClaim

    dataset = Dataset.objects.get(slug="bench")
    reset_claims()
    pool = iter(workers_pool(args.rounds * args.claims * 2 + 50))
    rng = random.Random(28)
    pair_ids = list(Pair.objects.values_list("pk", flat=True)[:20000])
    base = for_update_rate(args, pair_ids, rng)
    print(f"claims with live claims piling up, {args.concurrency} threads, {args.claims} claims a round")
    print(f"  one-row FOR UPDATE txn (baseline): {base:,.0f} txn/s  {load()}")

    kinds = []
    if "writing" not in skip:
        kinds.append(("writing", "claims/s", 1, 0.2))
    if "validation" not in skip:
        kinds.append(("validation", "pair claims/s", 5, 0.4))
    ratios: dict[str, list[float]] = {}
    for kind, unit, per_claim, target in kinds:
        no_task = [0]
        claimed: list[int] = []

        def claim(worker, kind=kind, no_task=no_task, claimed=claimed):
            if kind == "writing":
                found = claim_next_premise(worker, dataset=dataset)
                if found is None:
                    no_task[0] += 1
                else:
                    claimed.append(found.premise_id)
            else:
                batch = claim_validation_batch(worker, dataset=dataset)
                if batch is None:
                    no_task[0] += 1
                else:
                    claimed.extend(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))

        ratios[kind] = []
        for round_number in range(args.rounds):
            live = ValidationClaim.objects.filter(status="open").count() if kind == "validation" else len(claimed)
            workers = [next(pool) for _ in range(args.claims)]
            calls, seconds, errors = run_threads(args.concurrency, workers, claim)
            rate = calls / seconds * per_claim
            ratios[kind].append(rate / base)
            print(
                f"  {kind} claim, round {round_number + 1}, {live:,} live claims before: {rate:8,.0f} {unit:<14} "
                f"{rate / base:5.2f}x (target {target}x)  {load()}  errors {len(errors)} {errors[:1]}"
            )
        doubles = len(claimed) - len(set(claimed)) if kind == "writing" else 0
        print(f"    {kind}: {len(claimed)} claimed, 'no task' answers: {no_task[0]}, double assignments: {doubles}")
    after = for_update_rate(args, pair_ids, rng)
    print(f"  one-row FOR UPDATE txn again: {after:,.0f} txn/s  {load()}")
    for kind, values in ratios.items():
        print(
            f"  {kind}: ratio per round {', '.join(f'{v:.2f}' for v in values)} (first/last {values[0] / values[-1]:.2f})"
        )


if __name__ == "__main__":
    main()
