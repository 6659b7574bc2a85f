"""recompute_gold at corpus scale: the check with nothing to fix, the fix of
every pair, and how long a validator's submit waits while a recompute runs.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_claims \\
        nice -n 10 .venv/bin/python bench/recompute.py [--repeat 2] [--skip fix-all,submit-wait]

Reuses the corpus that `bench/run.py` built (COPY) in that database. "Every pair to fix" sets
every pair's counters to zero (as a load that went around the writers leaves them), so each
pair's label_count and gold label change: the worst case, where no update can skip an index
that holds label_count. The baseline is a bare count(*) of the label table in the same run.
The load average (1 min) is printed beside every figure: the machine is shared.

The zeroing leaves a dead version of every pair row. Production PostgreSQL's autovacuum clears them
(a fifth of a table changed is its default trigger); the machines here run PostgreSQL with
autovacuum off (conf.d/90-ci.conf), so without a VACUUM each round would add 866k dead rows for the
next to wade through (the 57-170 s figures of earlier rounds). The bench vacuums the pair table after
zeroing, as autovacuum would, and prints its dead rows; `--no-vacuum` leaves them, as earlier rounds did.
"""

import itertools
import os
import secrets
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))


def load():
    return f"load {os.getloadavg()[0]:.2f}"


def timed(function, repeat):
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - started)
    return min(seconds), statistics.median(seconds)


def hot_updates():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'collection_pair'")
        return cursor.fetchone()


def dead_rows():
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'collection_pair'")
        return cursor.fetchone()[0]


def zero_every_counter():
    """Every pair's counters as a load around the writers leaves them (label_count changes on every row)."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE collection_pair SET label_count = 0, entailment_votes = 0, neutral_votes = 0, "
            "contradiction_votes = 0, gold_label = '-'"
        )
        return cursor.rowcount


def section_recompute(args):
    from django.db import connection

    from corpus.recompute import recompute_gold

    def count_labels():
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM validation_validationlabel")
            cursor.fetchone()

    base, base_median = timed(count_labels, 3)
    print(
        f"  count(*) of the label table (baseline)          best {base * 1000:9.1f} ms median {base_median * 1000:9.1f} ms  {load()}"
    )
    report = recompute_gold()  # start consistent (an earlier run may have left counters to fix)
    if report.disagreements:
        print(f"  (first recompute fixed {report.fixed:,} pairs left by an earlier run)")
    best, median = timed(recompute_gold, args.repeat)
    print(
        f"  recompute_gold, nothing to fix                   best {best:9.2f} s  median {median:9.2f} s   "
        f"{best / base:7.1f}x count(*)  {load()}"
    )
    if "fix-all" in args.skip:
        return
    for _ in range(args.repeat):
        started = time.perf_counter()
        zeroed = zero_every_counter()
        corrupted = time.perf_counter() - started
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE collection_pair" if args.no_vacuum else "VACUUM ANALYZE collection_pair")
        dead = dead_rows()
        updates, hot = hot_updates()
        started = time.perf_counter()
        report = recompute_gold()
        seconds = time.perf_counter() - started
        updates_after, hot_after = hot_updates()
        print(
            f"  recompute_gold, every pair to fix ({report.fixed:,} of {zeroed:,})   {seconds:9.2f} s   "
            f"{seconds / base:7.1f}x count(*)  {load()}  "
            f"(HOT {hot_after - hot:,} of {updates_after - updates:,} updates; zeroing them took {corrupted:.1f} s; "
            f"{dead:,} dead pair rows before)"
        )
        assert report.fixed == zeroed
        assert recompute_gold(fix=False).disagreements == 0


def section_submit_wait(args):
    """A validator claims and submits in a loop while recompute_gold runs; the longest submit counts."""
    from django.db import connections

    from corpus.models import Dataset, Worker
    from corpus.recompute import recompute_gold
    from corpus.services import LabelRefused
    from validation.batch_claims import claim_validation_batch
    from validation.services import submit_validation_batch

    dataset = Dataset.objects.get(slug="bench")
    workers = itertools.cycle(list(Worker.objects.select_related("user").order_by("-pk")[:2000]))
    for kind in ("nothing to fix", "every pair to fix"):
        if kind == "nothing to fix" and "submit-nothing" in args.skip:
            continue
        if kind == "every pair to fix":
            if "fix-all" in args.skip:
                continue
            zero_every_counter()
            if not args.no_vacuum:
                with connections["default"].cursor() as cursor:
                    cursor.execute("VACUUM ANALYZE collection_pair")
        done = threading.Event()
        waits: list[float] = []
        refused = [0]

        def validate(done=done, waits=waits, refused=refused):
            try:
                while not done.is_set():
                    worker = next(workers)
                    batch = claim_validation_batch(worker, dataset=dataset)
                    if batch is None:
                        time.sleep(0.01)
                        continue
                    from validation.models import ValidationClaim

                    pairs = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
                    started = time.perf_counter()
                    try:
                        submit_validation_batch(worker, batch, dict.fromkeys(pairs, "neutral"))
                    except LabelRefused:
                        # Counters zeroed for the fix-all case make full pairs claimable; the fix
                        # then refuses their sixth label. The wait counts all the same.
                        refused[0] += 1
                    waits.append(time.perf_counter() - started)
            finally:
                connections.close_all()

        thread = threading.Thread(target=validate, daemon=True)
        thread.start()
        time.sleep(1)  # submits under way before the recompute starts
        started = time.perf_counter()
        try:
            recompute_gold()
        except Exception as error:  # the old single UPDATE could deadlock with a submit
            print(f"  recompute_gold failed beside a submitter: {error!r}"[:300])
            if kind == "every pair to fix":
                recompute_gold()  # leave the corpus consistent
        finally:
            seconds = time.perf_counter() - started
            time.sleep(0.5)
            done.set()
            thread.join()
        waits.sort()
        print(
            f"  submit during recompute_gold ({kind}, {seconds:.1f} s): {len(waits)} submits, "
            f"median {statistics.median(waits) * 1000:.0f} ms, longest {waits[-1] * 1000:.0f} ms "
            f"({refused[0]} refused a sixth label)  {load()}"
        )


def main():
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--no-vacuum", action="store_true", help="leave the zeroing's dead rows (autovacuum off)")
    parser.add_argument(
        "--skip", default="", help="timings (nothing to fix, every pair), fix-all, submit-wait, submit-nothing"
    )
    args = parser.parse_args()
    args.skip = set(filter(None, args.skip.split(",")))
    if "bench" not in os.environ.get("DATABASE_URL", ""):
        sys.exit("set DATABASE_URL to a PostgreSQL database whose name contains 'bench' (built by bench/run.py)")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    import django

    django.setup()
    from django.conf import settings

    settings.CONN_MAX_AGE = 0
    run(args)


def run(args):
    """Every section (Django set up, the bench corpus in the database): `args` has repeat and skip (a set)."""
    from corpus.models import Pair

    print(f"recompute_gold at {Pair.objects.count():,} pairs")
    if "timings" not in args.skip:
        section_recompute(args)
    if "submit-wait" not in args.skip:
        section_submit_wait(args)


if __name__ == "__main__":
    main()
