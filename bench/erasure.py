"""Erasing one heavy participant (5,000 labels, delete policy) as a multiple of recomputing the
statistics from scratch (goal: at most 0.05x).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/erasure.py [--pairs 50000]

Builds its corpus in a throwaway database (bench/throwaway_database.py): `--pairs` pairs of five
labels each (create_pairs, the importers' path), the labels of positions 2-5 given to 400 workers
round robin, and one heavy participant holding the second label of 5,000 pairs in a study whose
policy deletes contributions, then ANALYZE (the statistics autovacuum keeps on a live database).
BENCH_PROFILE=sql times every statement of the erasure and prints the plans of the slow ones
(BENCH_EXPLAIN_MS, default 100; auto_explain, which slows every statement somewhat); any other
BENCH_PROFILE value runs it under cProfile. "From scratch" is what a researcher runs to rebuild every figure:
`recompute_gold` with the lengths (the counters checked against the label table, every maintained
tally and worker figure checked and rebuilt), then the Table-2 figures from the pairs. The erasure
is `privacy.services.erase_by_market_id`, its recounts and tally deltas included, in a process
that imported what a server imports at start (`base.task_queue.load_for_enqueue`).
"""

import argparse
import os
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HEAVY_LABELS = 5_000
WORKERS = 400
LABELS = ("entailment", "neutral", "contradiction")
EXPLAIN_MS = int(os.environ.get("BENCH_EXPLAIN_MS", "100"))  # BENCH_PROFILE=sql: plans of statements this slow


def build(pair_count: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from corpus import tallies, worker_tally
    from corpus.models import Dataset, Genre, Pair, Premise, Worker
    from corpus.services import create_pairs
    from crowd.models import Study, StudySession

    rng = random.Random(71)
    genre = Genre.objects.order_by("pk").first()  # the migrations' genres
    assert genre is not None
    dataset = Dataset.objects.create(slug="bench", name="bench")
    premises = Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, split="dev", prompt_id=f"p{n}", text=f"A person number {n} walks a dog.")
        for n in range(pair_count // 3 + 1)
    )
    pairs, labels = [], []
    for n in range(pair_count):
        gold = rng.choice(LABELS)
        pairs.append(
            Pair(
                premise=premises[n // 3],
                pair_id=f"b{n}",
                hypothesis=f"Someone walks an animal {n % 97}.",
                author_label=gold,
            )
        )
        labels.append([gold, *(gold if rng.random() < 0.7 else rng.choice(LABELS) for _ in range(4))])
    create_pairs(dataset, "dev", pairs, labels)
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"prolific-W{n}") for n in range(WORKERS + 1)
    )
    workers = Worker.objects.bulk_create(
        Worker(user=user, market="prolific", external_id=f"W{n}") for n, user in enumerate(users)
    )
    heavy = workers[-1]
    with connection.cursor() as cursor:
        # Validators round robin on positions 2-5; the heavy one on position 2 of the first pairs.
        cursor.execute(
            "UPDATE validation_validationlabel SET worker_id = %s + ((pair_id * 4 + position) %% %s) WHERE position > 1",
            [workers[0].pk, WORKERS],
        )
        cursor.execute(
            "UPDATE validation_validationlabel SET worker_id = %s WHERE position = 2 AND pair_id IN "
            "(SELECT id FROM collection_pair WHERE dataset_id = %s ORDER BY id LIMIT %s)",
            [heavy.pk, dataset.pk, HEAVY_LABELS],
        )
    tallies.check_and_rebuild(dataset, worker_tally.TALLY, repair=True)
    study = Study.objects.create(
        slug="bench", name="bench", dataset=dataset, completion_code="B", contributions_on_withdrawal="delete"
    )
    StudySession.objects.create(study=study, worker=heavy, external_session_id="HEAVY-SESSION")
    tallies.fold()
    # The statistics a live database has (autovacuum analyzes a table once a fifth of it changed;
    # this box's server runs with autovacuum off): without them the planner took the corpus for a
    # few hundred pairs and sorted every pair against each chunk of the erasure's pairs.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def from_scratch() -> float:
    from corpus.agreement import agreement_stats
    from corpus.models import Dataset
    from corpus.recompute import recompute_gold
    from corpus.scope import Scope

    started = time.perf_counter()
    recompute_gold(Dataset.objects.get(slug="bench"), fix=True, lengths=True)
    agreement_stats(Scope.named("bench"), source="pairs")
    return time.perf_counter() - started


def erasure() -> float:
    from corpus.models import Dataset
    from privacy.services import erase_by_market_id

    team_id = Dataset.objects.get(slug="bench").team_id
    assert team_id is not None
    started = time.perf_counter()
    if os.environ.get("BENCH_PROFILE") == "sql":
        record = _erase_timing_statements(team_id)
    elif os.environ.get("BENCH_PROFILE"):
        import cProfile
        import pstats

        profile = cProfile.Profile()
        record = profile.runcall(erase_by_market_id, f"W{WORKERS}", team_id=team_id)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(45)
    else:
        record = erase_by_market_id(f"W{WORKERS}", team_id=team_id)
    seconds = time.perf_counter() - started
    assert record.counts["contributions.labels"] == HEAVY_LABELS, record.counts
    return seconds


def _erase_timing_statements(team_id: int) -> Any:
    """The erasure with every statement timed: totals per statement shape (numbers and lists of
    numbers folded, so the chunks of one statement add up), then the plans, with the rows and times
    each node took, of those over EXPLAIN_MS (auto_explain, its notices sent to this client)."""
    from collections import defaultdict, deque

    from django.db import connection

    from privacy.services import erase_by_market_id

    timings: list[tuple[float, str]] = []

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        begun = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            timings.append((time.perf_counter() - begun, sql))

    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for name, value in (
            ("log_min_duration", EXPLAIN_MS),
            ("log_analyze", "on"),
            ("log_buffers", "on"),
            ("log_nested_statements", "on"),
            ("log_level", "notice"),
        ):
            cursor.execute(f"SET auto_explain.{name} = '{value}'")
    raw = connection.connection
    raw.notices = deque(maxlen=400)
    with connection.execute_wrapper(timed):
        record = erase_by_market_id(f"W{WORKERS}", team_id=team_id)
    with connection.cursor() as cursor:
        cursor.execute("SET auto_explain.log_min_duration = -1")
    shapes: dict[str, list[float]] = defaultdict(list)
    for seconds, sql in timings:
        shape = re.sub(r"\((?:\s*(?:%s|\d+)\s*,?)+\)", "(…)", sql)
        shape = re.sub(r"VALUES (?:\(…\),? ?)+", "VALUES (…)", shape)
        shapes[shape].append(seconds)
    print(f"{len(timings)} statements, {sum(t for t, _ in timings):.2f} s in the database")
    for shape, spent in sorted(shapes.items(), key=lambda item: -sum(item[1]))[:25]:
        print(f"  {sum(spent):6.3f} s  {len(spent):4d}x  max {max(spent):.3f} s  {shape[:400]}")
    print(f"plans of the statements over {EXPLAIN_MS} ms:")
    for notice in raw.notices:  # the query's text cut short: the statements above name it
        print("\n".join(line[:240] for line in notice.rstrip().splitlines()))
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--scratch-runs", type=int, default=2, help="recomputes from scratch timed (the best counts)")
    args = parser.parse_args()
    from bench.throwaway_database import run_with_django

    def run() -> None:
        from base.task_queue import load_for_enqueue

        started = time.perf_counter()
        build(args.pairs)
        print(f"built {args.pairs} pairs ({args.pairs * 5} labels) in {time.perf_counter() - started:.1f} s")
        # What a web or worker process imports at start (annotation_site.wiring): else the erasure's
        # first enqueue (the flags' refresh, on commit) imports every task module and runs Django's
        # checks, 4 s of the erasure under load, once a process and not the erasure's.
        load_for_enqueue()
        scratch = min(from_scratch() for _ in range(args.scratch_runs))
        print(f"recompute from scratch: {scratch:.2f} s", flush=True)
        erase = erasure()
        print(f"erasure of {HEAVY_LABELS} labels:    {erase:.2f} s")
        print(f"erasure / recompute:    {erase / scratch:.3f}x (goal <= 0.05x; load {os.getloadavg()[0]:.2f})")

    run_with_django("erasure", run)


if __name__ == "__main__":
    main()
