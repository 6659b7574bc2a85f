"""Benchmark: the snapshot export, its label-level file and the release step
against a `COPY` of the same rows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_x .venv/bin/python bench/export_vs_copy.py \\
        --pairs 100000 [--reuse]

1. Builds (unless --reuse) a corpus the way a researcher loads one: MultiNLI JSONL files through
   `import_pairs` (bench/import_corpus.py's files, but every pair with five labels, spread over
   dev/test of ten genres, five held out).
2. In one process, `--rounds` times: `COPY (SELECT <the export's pair columns>, <labels
   aggregated>) TO STDOUT` into a file (the database's own speed for those rows), the export
   (`export_snapshot`, manifest and all) and the release (`modeling.release.make_release`) of that
   snapshot. Prints each round's seconds and ratios to that round's COPY, then the best of the
   rounds (each figure's best over the best COPY) and the worst round's ratio; checks every round
   wrote the same content hash and the same release bytes (digest printed, to compare two versions
   of the code on one corpus: copy this file into the other checkout's bench/ and run it there).
   pyarrow is imported before the first round: a process imports it once, not once per release.
3. Label rows (`--label-rows`): `COPY` of the label table's columns for the same pairs, the
   label-level file as the export writes it (`label_rows.write_label_rows`, the database's lines
   by one COPY), the same file by the Python definition (`label_rows.label_rows`, each row through
   format.jsonl_line and a hashing file: the writer the export used before), and the whole export
   with `label_rows` against the two COPYs together. Checks the two label files are the same bytes.
"""

import argparse
import hashlib
import json
import os
import random
import secrets
import shutil
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


# The label table's columns the label-level file is made of, one row per label, for the same pairs.
LABEL_COPY_SQL = """
COPY (
  SELECT l.pair_id, p.pair_id, pr.split, g.is_training, l.position, l.worker_id, l.label, l.ordinal,
         l.seconds, l.excluded
  FROM validation_validationlabel l
  JOIN collection_pair p ON p.id = l.pair_id
  JOIN collection_premise pr ON pr.id = p.premise_id
  JOIN collection_genre g ON g.id = pr.genre_id
  JOIN collection_dataset d ON d.id = p.dataset_id
  WHERE d.slug = %s
  ORDER BY l.pair_id, l.position
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


def copy_seconds(out_path, sql=COPY_SQL):
    from django.db import connection

    started = time.perf_counter()
    with open(out_path, "wb", buffering=1 << 20) as out, connection.cursor() as cursor:
        cursor.copy_expert(cursor.mogrify(sql, [DATASET]).decode(), out)
    return time.perf_counter() - started


def label_file_seconds(folder):
    """(seconds, sha256) of the label-level file as the export writes it (the database's lines)."""
    from modeling.snapshots.label_rows import write_label_rows

    Path(folder).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    entry = write_label_rows([DATASET], {"label_rows": True}, "three_way", Path(folder))
    return time.perf_counter() - started, entry["sha256"]


def python_label_file_seconds(folder):
    """(seconds, sha256) of the same file by the Python definition, as the export wrote it before."""
    from modeling.snapshots.format import LABELS_FILE, jsonl_line
    from modeling.snapshots.label_rows import label_rows
    from modeling.snapshots.writer import HashingFile

    Path(folder).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    sink = HashingFile(Path(folder) / LABELS_FILE)
    try:
        for row in label_rows([DATASET], {"label_rows": True}, "three_way"):
            sink.write(jsonl_line(row))
    finally:
        sink.close()
    return time.perf_counter() - started, sink.sha256


def export_seconds(snapshot_dir, filters=None):
    """(seconds, snapshot) of one export."""
    from django.conf import settings

    from modeling.snapshots.services import create_snapshot, export_snapshot

    settings.SNAPSHOT_DIR = Path(snapshot_dir)
    snapshot = create_snapshot(None, datasets=[DATASET], filters=filters)
    started = time.perf_counter()
    export_snapshot(snapshot, progress=lambda done, total: None, extra_files=())
    return time.perf_counter() - started, snapshot


def release_digest(folder):
    """One digest of every file a release wrote (Parquet files and card), by name."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            digest.update(f"{path.relative_to(folder)}\t".encode() + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


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
    parser.add_argument("--no-release", action="store_true", help="Leave out the release step.")
    parser.add_argument("--label-rows", action="store_true", help="Time the label-level file too.")
    parser.add_argument(
        "--python-label-rows", action="store_true", help="With --label-rows: the Python writer too (slow)."
    )
    args = parser.parse_args()
    if not args.reuse:
        print(f"built {args.pairs} pairs with five labels through import_pairs in {build(args.pairs):.1f} s")
    import pyarrow  # noqa: F401  (once per process, as in a worker that makes releases)

    rounds = []
    hashes, digests, label_hashes = set(), set(), set()
    with tempfile.TemporaryDirectory(prefix="nli-bench-export-") as tmp:
        for round_ in range(args.rounds):
            figures = {"copy": copy_seconds(Path(tmp) / f"copy{round_}.tsv")}
            figures["export"], snapshot = export_seconds(Path(tmp) / f"snap-{round_}")
            hashes.add(snapshot.content_hash)
            line = f"round {round_ + 1}: COPY {figures['copy']:.2f} s, export {figures['export']:.2f} s"
            line += f" ({figures['export'] / figures['copy']:.2f}x)"
            if not args.no_release:
                figures["release"] = release_seconds(snapshot, Path(tmp) / f"release{round_}")
                digests.add(release_digest(Path(tmp) / f"release{round_}"))
                line += f", release {figures['release']:.2f} s ({figures['release'] / figures['copy']:.2f}x)"
            shutil.rmtree(Path(tmp) / f"snap-{round_}", ignore_errors=True)
            if args.label_rows:
                figures["label copy"] = copy_seconds(Path(tmp) / f"labels{round_}.tsv", LABEL_COPY_SQL)
                figures["label file"], sha = label_file_seconds(Path(tmp) / f"labels-{round_}")
                label_hashes.add(sha)
                line += (
                    f"; label COPY {figures['label copy']:.2f} s, label file {figures['label file']:.2f} s "
                    f"({figures['label file'] / figures['label copy']:.2f}x)"
                )
                if args.python_label_rows:
                    figures["label file, Python"], sha = python_label_file_seconds(Path(tmp) / f"py-labels-{round_}")
                    label_hashes.add(sha)
                    line += (
                        f", Python label file {figures['label file, Python']:.2f} s "
                        f"({figures['label file, Python'] / figures['label copy']:.2f}x)"
                    )
                figures["both copies"] = figures["copy"] + figures["label copy"]
                figures["export with labels"], _ = export_seconds(
                    Path(tmp) / f"snap-labels-{round_}", filters={"label_rows": True}
                )
                line += (
                    f"; export with label rows {figures['export with labels']:.2f} s "
                    f"({figures['export with labels'] / figures['both copies']:.2f}x both COPYs)"
                )
                shutil.rmtree(Path(tmp) / f"snap-labels-{round_}", ignore_errors=True)
                shutil.rmtree(Path(tmp) / f"labels-{round_}", ignore_errors=True)
                shutil.rmtree(Path(tmp) / f"py-labels-{round_}", ignore_errors=True)
            rounds.append(figures)
            print(line, flush=True)
    # Each figure over the COPY of the same rows.
    baseline = {
        "copy": "copy",
        "export": "copy",
        "release": "copy",
        "label copy": "label copy",
        "label file": "label copy",
        "label file, Python": "label copy",
        "both copies": "both copies",
        "export with labels": "both copies",
    }
    best = {name: min(figures[name] for figures in rounds) for name in rounds[0]}
    print(f"best of {args.rounds}:")
    for name, seconds in best.items():
        base = baseline[name]
        print(f"  {name:<20} {seconds:6.2f} s  = {seconds / best[base]:.2f}x {base}")
    for name in best:
        if baseline[name] != name:
            worst = max(figures[name] / figures[baseline[name]] for figures in rounds)
            print(f"  worst round's {name} / {baseline[name]}: {worst:.2f}x")
    print(f"content hash: {', '.join(sorted(hashes))}; release digest: {', '.join(sorted(digests)) or '-'}")
    if label_hashes:
        print(f"label file sha256: {', '.join(sorted(label_hashes))}")
    if len(hashes) != 1 or len(digests) > 1 or len(label_hashes) > 1:
        sys.exit("the rounds wrote different files")


if __name__ == "__main__":
    main()
