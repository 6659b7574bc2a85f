"""Benchmark (issue 53.4): the snapshot export and the release step against a `COPY` of the same columns.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_x .venv/bin/python bench/export_vs_copy.py \\
        --pairs 100000 [--reuse]

1. Builds (unless --reuse) a corpus the way a researcher loads one: MultiNLI JSONL files through
   `import_pairs` (bench/import_corpus.py's files, but every pair with five labels, spread over
   dev/test of ten genres, five held out).
2. In one process, best of `--rounds`: `COPY (SELECT <the export's pair columns>, <labels
   aggregated>) TO STDOUT` into a file (the database's own speed for those rows); the export with
   the reader it had before (the ORM join, one Python row per label: `selectors.rows_for_export`)
   and with the one it has now (`selectors.export_rows`: labels aggregated in SQL, one row per pair,
   raw cursor); the release (`modeling.release.make_release`) of the snapshot. Prints each and
   its ratio to the COPY, and checks both exports give the same content hash.
"""

import argparse
import json
import os
import random
import secrets
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
if "bench" not in os.environ.get("DATABASE_URL", ""):
    sys.exit("DATABASE_URL must name a database whose name contains 'bench' (its corpus is emptied)")

import django  # noqa: E402

django.setup()

from import_corpus import HELD_OUT_GENRES, LABELS, TRAINING_GENRES, _sentence, empty_corpus  # noqa: E402

DATASET = "bench"

# The export's columns (selectors.PAIR_COLUMNS) and the labels it counts, one row per pair.
COPY_SQL = """
COPY (
  SELECT p.id, d.slug, p.pair_id, p.hypothesis, p.parse, p.binary_parse, p.author_label,
         p.needs_validation, p.label_count, p.gold_label, pr.prompt_id, pr.text, pr.parse,
         pr.binary_parse, pr.split, g.slug, g.is_training,
         (SELECT array_agg(l.label ORDER BY l.position) FROM validation_validationlabel l
           WHERE l.pair_id = p.id) AS labels
  FROM collection_pair p
  JOIN collection_premise pr ON pr.id = p.premise_id
  JOIN collection_genre g ON g.id = pr.genre_id
  JOIN collection_dataset d ON d.id = p.dataset_id
  WHERE d.slug = %s
  ORDER BY p.id
) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\t', HEADER)
"""


def write_files(pairs_total, directory, seed=2018):
    """MultiNLI JSONL files, every pair with five labels (dev and test, ten genres)."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)] + [
        "the",
        "a",
        "man",
        "woman",
        "dog",
        "runs",
        "is",
        "not",
        "city",
        "he",
        "she",
    ] * 40
    paths = {split: Path(directory) / f"bench_{split}.jsonl" for split in ("dev", "test")}
    handles = {split: open(path, "w", encoding="utf-8") for split, path in paths.items()}  # noqa: SIM115
    written = premise_id = 0
    try:
        while written < pairs_total:
            premise_id += 1
            split = "dev" if premise_id % 2 else "test"
            genre = (TRAINING_GENRES + HELD_OUT_GENRES)[premise_id % 10]
            premise = _sentence(rng, words, rng.randint(8, 40))
            for author_label in LABELS:
                if written >= pairs_total:
                    break
                written += 1
                labels = [author_label] + [rng.choice(LABELS) if rng.random() < 0.3 else author_label for _ in range(4)]
                record = {
                    "annotator_labels": labels,
                    "genre": genre,
                    "gold_label": next((label for label in LABELS if labels.count(label) >= 3), "-"),
                    "pairID": f"{premise_id}{author_label[0]}",
                    "promptID": str(premise_id),
                    "sentence1": premise,
                    "sentence2": _sentence(rng, words, rng.randint(4, 16)),
                }
                handles[split].write(json.dumps(record) + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    return paths


def build(pairs_total):
    from django.core.management import call_command
    from django.db import connection

    empty_corpus()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="nli-bench-export-") as tmp:
        for split, path in write_files(pairs_total, tmp).items():
            call_command("import_pairs", str(path), dataset=DATASET, split=split, no_progress=True, no_tag=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return time.perf_counter() - started


def copy_seconds(out_path):
    from django.db import connection

    started = time.perf_counter()
    with open(out_path, "wb", buffering=1 << 20) as out, connection.cursor() as cursor:
        cursor.copy_expert(cursor.mogrify(COPY_SQL, [DATASET]).decode(), out)
    return time.perf_counter() - started


def export_seconds(snapshot_dir, reader=None):
    """(seconds, snapshot) of one export; `reader` replaces the export's row reader (the old one)."""
    from django.conf import settings

    from modeling.snapshots import selectors
    from modeling.snapshots.services import create_snapshot, export_snapshot

    settings.SNAPSHOT_DIR = Path(snapshot_dir)
    kept = selectors.export_rows
    if reader is not None:
        setattr(selectors, "export_rows", reader)  # noqa: B010 (the services read it through the module)
    try:
        snapshot = create_snapshot(None, datasets=[DATASET])
        started = time.perf_counter()
        export_snapshot(snapshot, progress=lambda done, total: None, extra_files=())
        return time.perf_counter() - started, snapshot
    finally:
        setattr(selectors, "export_rows", kept)  # noqa: B010


def release_seconds(snapshot, out):
    from modeling.release import make_release

    started = time.perf_counter()
    make_release(snapshot, out)
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="Keep the corpus already in the database.")
    args = parser.parse_args()
    if not args.reuse:
        print(f"built {args.pairs} pairs with five labels through import_pairs in {build(args.pairs):.1f} s")

    from modeling.snapshots import selectors
    from modeling.snapshots.services import normalize_request

    datasets, filters = normalize_request([DATASET])

    def old_reader(pairs, **paging):
        """The export's reader before issue 53.4: pages of the ORM join, premises probed per pair."""
        paged = selectors.pairs_for_export(datasets, filters, premise_per_row=True)
        return selectors.rows_for_export(paged, **paging)

    best: dict[str, float] = {}
    hashes: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="nli-bench-export-") as tmp:
        for round_ in range(args.rounds):
            figures = {"copy": copy_seconds(Path(tmp) / f"copy{round_}.tsv")}
            for name, reader in (("export before (ORM rows)", old_reader), ("export now", None)):
                figures[name], snapshot = export_seconds(Path(tmp) / f"snap-{round_}-{len(hashes)}", reader)
                hashes[name] = snapshot.content_hash
                if name == "export now":
                    figures["release"] = release_seconds(snapshot, Path(tmp) / f"release{round_}")
            for name, seconds in figures.items():
                best[name] = min(best.get(name, seconds), seconds)
            print(f"round {round_ + 1}: " + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in figures.items()))
    print(f"best of {args.rounds}:")
    for name, seconds in best.items():
        print(f"  {name:<26} {seconds:6.2f} s  = {seconds / best['copy']:.2f}x COPY")
    same = len(set(hashes.values())) == 1
    print(f"content hashes {'equal' if same else 'DIFFER'}: {hashes}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
