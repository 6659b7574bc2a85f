"""Benchmark: the validation claim's candidate query with the item-kind filter (MPE items never join a
MultiNLI batch), on bench/run.py's MultiNLI-shaped corpus plus a multi-premise dataset.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_mpe_bench .venv/bin/python bench/mpe_claims.py --pairs 433000

Rows (median of --repeat rounds of --rounds candidate queries each, ms per query, FOR UPDATE SKIP
LOCKED in a transaction as a claim runs it):
  baseline     the candidate query as it was before item kinds (no kind filter), single-premise task
  multinli     the same with the kind filter: what /validate/next/ runs now
  mpe, all     the MPE query over every multi-premise dataset at once (walks the whole queue)
  mpe task     what /validate/mpe/next/ runs: one multi-premise dataset at a time (claim_mpe_batch)
The ratio column is against the baseline measured in the same run.
"""

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_mpe_bench"

from bench.run import ensure_database, generate  # noqa: E402

MPE_ITEMS = 2000


def add_mpe_items():
    from corpus.models import Dataset, Genre, ItemKind, Pair, Premise
    from corpus.services import create_pairs

    dataset, _ = Dataset.objects.get_or_create(
        slug="bench-mpe", defaults={"name": "bench mpe", "item_kind": ItemKind.MULTI_PREMISE}
    )
    genre = Genre.objects.order_by("pk").first()
    premises = Premise.objects.bulk_create(
        Premise(
            dataset=dataset,
            genre=genre,
            prompt_id=f"m{i}",
            text=f"caption {i} a. caption {i} b.",
            text_hash=str(i),
            sentences=[{"text": f"caption {i} a.", "source": f"{i}.jpg#0"}],
            split="dev",
        )
        for i in range(MPE_ITEMS)
    )
    create_pairs(
        dataset,
        "dev",
        [Pair(premise=p, pair_id=p.prompt_id, hypothesis="h", author_label="") for p in premises],
        [[] for _ in premises],
        needs_validation=True,
    )


def old_claimable_pairs(worker, now):
    """validation.selectors.claimable_pairs before item kinds (the baseline)."""
    from django.db.models import F

    from corpus.models import LABELS_PER_PAIR, Pair, PremiseStatus
    from validation.models import ValidationClaim
    from validation.selectors import open_claims_subquery

    pairs = Pair.objects.filter(needs_validation=True, label_count__lt=LABELS_PER_PAIR)
    pairs = pairs.exclude(author=worker)
    pairs = pairs.exclude(pk__in=worker.labels.values("pair_id"))
    pairs = pairs.exclude(pk__in=ValidationClaim.objects.filter(worker=worker).values("pair_id"))
    pairs = pairs.exclude(premise__status=PremiseStatus.HELD)
    if not worker.is_trusted:
        pairs = pairs.exclude(dataset__validation_policy__trusted_only=True)
    pairs = pairs.alias(open_claims=open_claims_subquery(now)).filter(
        label_count__lt=LABELS_PER_PAIR - F("open_claims")
    )
    return pairs.order_by("-label_count", "id")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=43000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--keep", action="store_true", help="reuse the corpus already generated")
    args = parser.parse_args()
    ensure_database()
    import django

    django.setup()
    from django.db import connection, transaction
    from django.utils import timezone

    from corpus.models import Dataset, ItemKind, Pair, Worker
    from crowd.claiming import lock_rows as _lock_rows
    from validation.selectors import candidate_statement

    if not args.keep:
        seconds, labels = generate(args.pairs, 20)
        add_mpe_items()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        print(f"generated {args.pairs:,} pairs, {labels:,} labels and {MPE_ITEMS} MPE items in {seconds:.1f} s")
    worker = Worker.objects.order_by("pk").first()
    assert worker is not None, "no worker: run the bench fill first"
    mpe = Dataset.objects.get(slug="bench-mpe")
    queued = Pair.objects.filter(needs_validation=True, label_count__lt=5).count()
    print(f"queued for validation: {queued:,}; load average {os.getloadavg()[0]:.2f}")

    def query(build):
        def run():
            with transaction.atomic():
                built = build()
                if isinstance(built, tuple):  # the claim's candidate statement
                    with connection.cursor() as cursor:
                        cursor.execute(*built)
                        ids = cursor.fetchall()
                else:
                    ids = list(_lock_rows(built).values_list("pk", flat=True)[:15])
            assert ids, "no candidates"

        return run

    builders = {
        "baseline (no kind filter)": lambda: old_claimable_pairs(worker, timezone.now()),
        "multinli (kind filter)": lambda: candidate_statement(worker, timezone.now(), limit=15, lock=True),
        "mpe, all datasets at once": lambda: candidate_statement(
            worker, timezone.now(), item_kind=ItemKind.MULTI_PREMISE, limit=15, lock=True
        ),
        "mpe task (per dataset)": lambda: candidate_statement(
            worker, timezone.now(), dataset=mpe, item_kind=ItemKind.MULTI_PREMISE, limit=15, lock=True
        ),
    }
    cases = [(name, query(build)) for name, build in builders.items()]
    results = {}
    for name, run in cases:
        run()  # warm
        medians = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            for _ in range(args.rounds):
                run()
            medians.append((time.perf_counter() - started) / args.rounds * 1000)
        results[name] = statistics.median(medians)
    executions = {}
    for name, build in builders.items():
        times = []
        for _ in range(5):
            with transaction.atomic():
                sql, params = _lock_rows(build()).values_list("pk", flat=True)[:15].query.sql_with_params()
                with connection.cursor() as cursor:
                    cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
                    plan = cursor.fetchone()[0]
                    times.append((plan[0] if isinstance(plan, list) else plan)["Execution Time"])
        executions[name] = statistics.median(times)
    base = results[cases[0][0]]
    base_db = executions[cases[0][0]]
    print(f"{'':28s} {'wall ms/query':>14s} {'ratio':>7s} {'db execution ms':>16s} {'ratio':>7s}")
    for name, ms in results.items():
        print(f"{name:28s} {ms:14.2f} {ms / base:7.2f} {executions[name]:16.2f} {executions[name] / base_db:7.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
