"""Erasing one heavy participant (5,000 labels, delete policy) as a multiple of recomputing the
statistics from scratch (issue 71; goal: at most 0.05x).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/erasure.py [--pairs 50000]

Builds its corpus in a throwaway database (bench/throwaway_database.py): `--pairs` pairs of five
labels each (create_pairs, the importers' path), the labels of positions 2-5 given to 400 workers
round robin, and one heavy participant holding the second label of 5,000 pairs in a study whose
policy deletes contributions. "From scratch" is what a researcher runs to rebuild every figure:
`recompute_gold` with the lengths (the counters checked against the label table, every maintained
tally and worker figure checked and rebuilt), then the Table-2 figures from the pairs. The erasure
is `privacy.services.erase_by_market_id`, its recounts and tally deltas included.
"""

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

HEAVY_LABELS = 5_000
WORKERS = 400
LABELS = ("entailment", "neutral", "contradiction")


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


def from_scratch() -> float:
    from corpus.agreement import agreement_stats
    from corpus.recompute import recompute_gold

    started = time.perf_counter()
    recompute_gold("bench", fix=True, lengths=True)
    agreement_stats("bench", source="pairs")
    return time.perf_counter() - started


def erasure() -> float:
    from corpus.models import Dataset
    from privacy.services import erase_by_market_id

    team_id = Dataset.objects.get(slug="bench").team_id
    assert team_id is not None
    started = time.perf_counter()
    if os.environ.get("BENCH_PROFILE") == "sql":
        from django.db import connection

        timings: list[tuple[float, str]] = []

        def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            begun = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                timings.append((time.perf_counter() - begun, sql[:300]))

        with connection.execute_wrapper(timed):
            record = erase_by_market_id(f"W{WORKERS}", team_id=team_id)
        print(f"{len(timings)} statements, {sum(t for t, _ in timings):.2f} s in the database")
        for seconds, sql in sorted(timings, reverse=True)[:15]:
            print(f"  {seconds:6.3f} s  {sql}")
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=50_000)
    parser.add_argument("--scratch-runs", type=int, default=2, help="recomputes from scratch timed (the best counts)")
    args = parser.parse_args()
    from bench.throwaway_database import run_with_django

    def run() -> None:
        started = time.perf_counter()
        build(args.pairs)
        print(f"built {args.pairs} pairs ({args.pairs * 5} labels) in {time.perf_counter() - started:.1f} s")
        scratch = min(from_scratch() for _ in range(args.scratch_runs))
        print(f"recompute from scratch: {scratch:.2f} s", flush=True)
        erase = erasure()
        print(f"erasure of {HEAVY_LABELS} labels:    {erase:.2f} s")
        print(f"erasure / recompute:    {erase / scratch:.3f}x (goal <= 0.05x; load {os.getloadavg()[0]:.2f})")

    run_with_django("erasure", run)


if __name__ == "__main__":
    main()
