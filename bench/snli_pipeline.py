"""Benchmark: import_pairs + recompute_gold + agreement_stats on SNLI 1.0 dev, on a fresh database.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/snli_pipeline.py
    .venv/bin/python bench/snli_pipeline.py      # no DATABASE_URL: under scripts/with_database.py

Creates a throwaway database on that PostgreSQL server (bench_snli_pipeline_<pid>, migrated,
dropped at the end: bench/throwaway_database.py), runs the three steps, prints wall times and, as
ratios, how each compares with the baseline measured in the same run: reading the file and
computing the same figures in plain Python (json + Counter).
"""

import json
import os
import secrets
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

import django  # noqa: E402

from bench.throwaway_database import require_server, throwaway_database  # noqa: E402

SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"


def baseline(path):
    """The same headline figures in plain Python, for scale."""
    gold: Counter[str] = Counter()
    unanimous = five = 0
    with open(path, encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            labels = row["annotator_labels"]
            label, votes = Counter(labels).most_common(1)[0]
            gold[label if votes >= 3 else "-"] += 1
            if len(labels) == 5:
                five += 1
                unanimous += votes == 5
    return {"gold": dict(gold), "unanimous": unanimous / five}


def timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def main():
    if not SNLI_DEV.exists():
        sys.exit(f"{SNLI_DEV} is not here")
    require_server()
    with throwaway_database("snli_pipeline") as url:
        os.environ["DATABASE_URL"] = url
        django.setup()
        from corpus.agreement import agreement_stats
        from corpus.recompute import recompute_gold
        from importers.services import import_pairs_file
        from tests.importers.helpers import ensure_genres

        ensure_genres("captions")
        _, base = timed(baseline, SNLI_DEV)
        report, t_import = timed(import_pairs_file, SNLI_DEV, "snli")
        _recomputed, t_recompute = timed(recompute_gold, "snli")
        # A recompute that has to fix every pair: counters zeroed first.
        from corpus.models import Pair

        Pair.objects.update(label_count=0, entailment_votes=0, neutral_votes=0, contradiction_votes=0, gold_label="-")
        fixed, t_fix = timed(recompute_gold, "snli")
        stats, t_stats = timed(agreement_stats, "snli")

    print(f"SNLI 1.0 dev on PostgreSQL: {report.pairs_created} pairs, {report.labels_created} labels")
    print(f"  baseline (plain Python read + figures) {base:7.2f} s  1.00x")
    for name, seconds in (
        ("import_pairs", t_import),
        ("recompute_gold (nothing to fix)", t_recompute),
        ("recompute_gold (fix all 10k)", t_fix),
        ("agreement_stats", t_stats),
        ("import + recompute + stats", t_import + t_recompute + t_stats),
    ):
        print(f"  {name:<38} {seconds:7.2f} s  {seconds / base:5.2f}x")
    print(f"  fixed {fixed.fixed} pairs; statistics: {json.dumps(stats)}")


if __name__ == "__main__":
    main()
