"""A claim's catch-trial pick (`quality.catch_trials.pick_catch_trials`) on a dataset the planner
has not seen yet, beside one it has.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/catch_pick.py \\
        [--pairs 433000] [--new 20000] [--marked 300] [--repeat 5]

A throwaway database (bench/throwaway_database.py) gets a collection of --pairs pairs
(bench/tagging_probes.py's `fill`), then ANALYZE; then a new dataset of --new pairs, validated (none
waits in the queue), of which --marked are marked as catch trials, and a validator who labelled
some of them. The statistics are now stale, as they are between a researcher's import and
autovacuum's next ANALYZE: the planner believes the new dataset has next to no pair.

Timed, best of --repeat, with the statistics stale and again after ANALYZE; the pick's slowest
statement, before and after, is printed with EXPLAIN ANALYZE (stale statistics):

- before: the catch premises as a subquery of the candidates' statement (`premise_id IN (SELECT
  ... FROM reference labels JOIN pairs WHERE dataset = ...)`), as `catch_role_pairs` read them
  until 2026-11-27. Believing the dataset empty, the planner joined the two with a nested loop that
  walked the dataset's pairs once for every candidate: quadratic in the dataset's size;
- after: the catch premises read first, in their own statement (the marked pairs' partial index),
  and given to the candidates' statement as a list of ids.
"""

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.tagging_probes import best_ms, explained, fill
from bench.throwaway_database import run_with_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--new", type=int, default=20_000)
    parser.add_argument("--marked", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run_with_django("catch_pick", lambda: run(args))


def run(args: argparse.Namespace) -> None:
    from datetime import timedelta

    from django.contrib.auth.models import User
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from corpus.models import Genre, Pair, ValidationLabel, Worker
    from quality import catch_trials
    from quality.models import ReferenceLabel
    from validation.models import ValidationClaim

    started = time.perf_counter()
    genre = Genre.objects.order_by("pk")[0]
    stamp = timezone.now() - timedelta(days=1)
    fill("collection", args.pairs, genre, stamp)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    dataset, _ = fill("new", args.new, genre, stamp)
    Pair.objects.filter(dataset=dataset).update(needs_validation=False)
    researcher = User.objects.create(username="researcher")
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk").values_list("pk", flat=True))
    marked = random.Random(7).sample(pairs, args.marked)
    ReferenceLabel.objects.bulk_create(
        [ReferenceLabel(pair_id=pk, label="entailment", is_catch_trial=True, labelled_by=researcher) for pk in marked]
    )
    validator = Worker.objects.create(user=User.objects.create(username="validator"))
    ValidationLabel.objects.bulk_create(
        [ValidationLabel(pair_id=pk, position=2, label="neutral", worker=validator) for pk in pairs[:: args.new // 50]]
    )
    print(
        f"built {args.pairs:,} analysed pairs, then {args.new:,} new ones ({args.marked} marked as catch trials)"
        f" in {time.perf_counter() - started:.1f} s"
    )

    def pick() -> list[int]:
        with transaction.atomic():  # the claim's transaction: the rows are locked FOR NO KEY UPDATE
            return catch_trials.pick_catch_trials(
                worker=validator,
                dataset=dataset,
                most=4,
                per_batch=0.4,
                seen=ValidationClaim.objects.filter(worker=validator).values("pair_id"),
                claims=ValidationClaim.objects.all(),
                draw=lambda: 0.0,
            )

    def catch_role_pairs_before(dataset_ids):  # the statement before 2026-11-27: the marks as a subquery
        role = Pair.objects.filter(premise_id__in=catch_trials._marked(dataset_ids).values("pair__premise_id"))
        if dataset_ids is not None:
            role = role.filter(dataset_id__in=dataset_ids)
        return role.exclude(catch_trials._still_in_validation())

    def slowest_statement() -> str:
        with CaptureQueriesContext(connection) as captured:
            pick()
        return max(captured.captured_queries, key=lambda query: float(query["time"]))["sql"]

    after = catch_trials.catch_role_pairs
    rows, plans = [], {}
    for statistics in ("stale", "analysed"):
        if statistics == "analysed":
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
        timings = {}
        for label, role_pairs in (("before", catch_role_pairs_before), ("after", after)):
            catch_trials.catch_role_pairs = role_pairs
            try:
                assert pick(), "no catch trial picked"
                timings[label] = best_ms(pick, args.repeat)
                if statistics == "stale":
                    with transaction.atomic():
                        plans[label] = explained(slowest_statement(), [])
            finally:
                catch_trials.catch_role_pairs = after
        rows.append((statistics, timings["before"], timings["after"]))
    print("\n| statistics | before (ms) | after (ms) | before / after |\n|---|---|---|---|")
    for statistics, before, after_ms in rows:
        print(f"| {statistics} | {before:,.1f} | {after_ms:,.1f} | {before / after_ms:,.0f}x |")
    for label, plan in plans.items():
        print(f"\n### {label}: the pick's slowest statement, stale statistics\n{plan}")


if __name__ == "__main__":
    main()
