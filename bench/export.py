"""Benchmark: snapshot export of a MultiNLI-size corpus against PostgreSQL's own COPY of the same rows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_export_bench \\
        .venv/bin/python bench/export.py --pairs 433000 --validated 40000

1. Generates a synthetic corpus in that database with COPY (the database's name must contain
   "bench": its pair, premise and label tables are emptied first). Validated pairs (5 labels)
   are the dev/test pairs across ten genres, five of them held out; the rest are unvalidated
   train pairs of the five training genres, as in MultiNLI.
2. Exports it (all files, JSONL + TSV) in a fresh subprocess, timing it and sampling its
   resident memory after every page, so the peak and the growth over the run are its own.
3. Runs `COPY (SELECT ... labels aggregated ...) TO STDOUT` of the same rows into a file: the
   fastest the database itself can hand the rows out. Prints both and their ratio.
"""

import argparse
import json
import os
import random
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The corpus generator's pieces are bench/run.py's (the one benchmark entry), written once.
from run import copy_rows, sentence  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
# DEBUG stays off as in production (no query log): a throwaway key of the run's own.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))

TRAINING_GENRES = ["fiction", "government", "slate", "telephone", "travel"]
HELD_OUT_GENRES = ["facetoface", "letters", "nineeleven", "oup", "verbatim"]
LABELS = ["entailment", "neutral", "contradiction"]
DATASET = "bench"


def rss_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib():
    # VmHWM: the high-water mark of this process's own memory. ru_maxrss is no good here: across
    # fork and exec it keeps the parent's peak, which is the generator's, not the export's.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def setup_django():
    import django

    django.setup()
    from django.db import connection

    if "bench" not in connection.settings_dict["NAME"]:
        sys.exit("the database name must contain 'bench' (its corpus tables are emptied)")
    return connection


def generate(pairs_total, validated_total, seed=2018):
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.utils import timezone

    from corpus.gold import gold_from_votes
    from corpus.models import Dataset, Genre, PromptFamily, text_hash

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(5000)] + ["the", "a", "man", "woman", "dog", "runs", "is", "not", "city"] * 50
    now = timezone.now().isoformat()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE validation_validationlabel, validation_validationclaim, collection_pair, "
            "collection_writingclaim, collection_premisereport, collection_premise CASCADE"
        )
        family, _ = PromptFamily.objects.get_or_create(
            slug="bench",
            defaults={
                "name": "Bench",
                "instructions": "-",
                "entailment_prompt": "-",
                "neutral_prompt": "-",
                "contradiction_prompt": "-",
            },
        )
        genre_ids = {}
        for slug in TRAINING_GENRES + HELD_OUT_GENRES:
            genre_row, _ = Genre.objects.get_or_create(
                slug=slug, defaults={"name": slug, "is_training": slug in TRAINING_GENRES, "family": family}
            )
            genre_ids[slug] = (genre_row.pk, genre_row.is_training)
        dataset, _ = Dataset.objects.get_or_create(slug=DATASET, defaults={"name": "Bench corpus"})

        premises, pairs, labels = [], [], []
        pair_id = label_id = 0
        premise_id = 0
        while pair_id < pairs_total:
            premise_id += 1
            validated = pair_id < validated_total
            if validated:
                split = "dev" if premise_id % 2 else "test"
                genre = (TRAINING_GENRES + HELD_OUT_GENRES)[premise_id % 10]
            else:
                split, genre = "train", TRAINING_GENRES[premise_id % 5]
            text = sentence(rng, words, rng.randint(8, 40))
            premises.append(
                (
                    premise_id,
                    dataset.pk,
                    genre_ids[genre][0],
                    f"{premise_id}",
                    text,
                    text_hash(text),
                    "",
                    "",
                    split,
                    "available",
                    1,
                    "bench",
                    now,
                )
            )
            for author_label in LABELS:
                if pair_id >= pairs_total:
                    break
                pair_id += 1
                row_labels = [author_label] + (
                    [rng.choice(LABELS) if rng.random() < 0.3 else author_label for _ in range(4)] if validated else []
                )
                votes = [row_labels.count(label) for label in LABELS]
                gold = gold_from_votes(votes[0], votes[1], votes[2]) if validated else "-"
                hypothesis = sentence(rng, words, rng.randint(4, 16))
                pairs.append(
                    (
                        pair_id,
                        dataset.pk,
                        premise_id,
                        f"{premise_id}{author_label[0]}",
                        hypothesis,
                        "",
                        "",
                        author_label,
                        now,
                        validated,
                        len(row_labels),
                        *votes,
                        gold,
                    )
                )
                for position, label in enumerate(row_labels, start=1):
                    label_id += 1
                    labels.append((label_id, pair_id, position, label, now))
            if len(pairs) >= 50_000:
                _flush(cursor, premises, pairs, labels)
        _flush(cursor, premises, pairs, labels)
        for table in ("collection_premise", "collection_pair", "validation_validationlabel"):
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT MAX(id) FROM {table}))")
        cursor.execute("ANALYZE collection_premise; ANALYZE collection_pair; ANALYZE validation_validationlabel")
    return time.perf_counter() - started, label_id


def _flush(cursor, premises, pairs, labels):
    copy_rows(
        cursor,
        "collection_premise",
        [
            "id",
            "dataset_id",
            "genre_id",
            "prompt_id",
            "text",
            "text_hash",
            "parse",
            "binary_parse",
            "split",
            "status",
            "writings_done",
            "source",
            "created_at",
        ],
        premises,
    )
    copy_rows(
        cursor,
        "collection_pair",
        [
            "id",
            "dataset_id",
            "premise_id",
            "pair_id",
            "hypothesis",
            "parse",
            "binary_parse",
            "author_label",
            "created_at",
            "needs_validation",
            "label_count",
            "entailment_votes",
            "neutral_votes",
            "contradiction_votes",
            "gold_label",
        ],
        pairs,
    )
    copy_rows(cursor, "validation_validationlabel", ["id", "pair_id", "position", "label", "created_at"], labels)
    premises.clear()
    pairs.clear()
    labels.clear()


def export_in_this_process(snapshot_dir):
    """Child process: export every file and report time and memory as JSON on stdout."""
    from django.conf import settings

    settings.SNAPSHOT_DIR = Path(snapshot_dir)
    from modeling.snapshots.services import create_snapshot, export_snapshot

    samples = []
    before = rss_mib()
    snapshot = create_snapshot(None, datasets=[DATASET])
    started = time.perf_counter()
    export_snapshot(snapshot, progress=lambda done, total: samples.append((done, rss_mib())))
    seconds = time.perf_counter() - started
    total_bytes = sum(f.bytes for f in snapshot.files.all())
    print(
        json.dumps(
            {
                "rows": snapshot.row_count,
                "seconds": seconds,
                "bytes": total_bytes,
                "files": snapshot.files.count(),
                "rss_before_mib": before,
                "peak_rss_mib": peak_rss_mib(),
                "samples": samples,
                "content_hash": snapshot.content_hash,
            }
        )
    )


BASELINE_SQL = """
COPY (
  SELECT p.gold_label, pr.binary_parse, p.binary_parse, pr.parse, p.parse, pr.text, p.hypothesis,
         pr.prompt_id, p.pair_id, g.slug,
         string_agg(l.label, ',' ORDER BY l.position) FILTER (WHERE l.excluded IS NOT TRUE)
  FROM collection_pair p
  JOIN collection_premise pr ON pr.id = p.premise_id
  JOIN collection_genre g ON g.id = pr.genre_id
  JOIN collection_dataset d ON d.id = p.dataset_id
  LEFT JOIN validation_validationlabel l ON l.pair_id = p.id
  WHERE d.slug = %s
  GROUP BY p.id, pr.id, g.id
  ORDER BY p.id
) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\t', HEADER)
"""


def copy_baseline(connection, out_path):
    started = time.perf_counter()
    with open(out_path, "wb", buffering=1 << 20) as out, connection.cursor() as cursor:
        sql = cursor.mogrify(BASELINE_SQL, [DATASET]).decode()
        cursor.copy_expert(sql, out)
    return time.perf_counter() - started, out_path.stat().st_size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--validated", type=int, default=40_000)
    parser.add_argument("--reuse", action="store_true", help="Keep the corpus already in the database.")
    parser.add_argument("--child-export", help=argparse.SUPPRESS)
    args = parser.parse_args()
    connection = setup_django()
    if args.child_export:
        export_in_this_process(args.child_export)
        return

    if not args.reuse:
        seconds, label_rows = generate(args.pairs, args.validated)
        print(f"generated {args.pairs} pairs ({args.validated} validated), {label_rows} labels in {seconds:.1f} s")
    with tempfile.TemporaryDirectory(prefix="nli-bench-export-") as tmp:
        child = subprocess.run(
            [sys.executable, __file__, "--child-export", str(Path(tmp) / "snapshots")],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ,
        )
        result = json.loads(child.stdout.strip().splitlines()[-1])
        copy_seconds, copy_bytes = copy_baseline(connection, Path(tmp) / "copy.tsv")

    rows = result["rows"]
    samples = result["samples"]
    early = next((rss for done, rss in samples if done >= rows * 0.1), samples[0][1] if samples else 0)
    print(
        f"export: {rows} pairs -> {result['files']} files, {result['bytes'] / 2**20:.1f} MiB in {result['seconds']:.1f} s "
        f"= {rows / result['seconds']:,.0f} pairs/s"
    )
    print(
        f"        RSS {result['rss_before_mib']:.0f} MiB before, {early:.0f} MiB at 10%, "
        f"{samples[-1][1] if samples else 0:.0f} MiB at the end, peak {result['peak_rss_mib']:.0f} MiB"
    )
    print(
        f"baseline COPY TO STDOUT (one TSV, labels aggregated): {copy_bytes / 2**20:.1f} MiB in {copy_seconds:.1f} s "
        f"= {rows / copy_seconds:,.0f} pairs/s"
    )
    print(
        f"ratio export / COPY time: {result['seconds'] / copy_seconds:.2f}x "
        f"(the export writes {result['bytes'] / copy_bytes:.2f}x the bytes: JSONL and TSV, per split)"
    )
    print(f"content hash {result['content_hash']}")


if __name__ == "__main__":
    main()
