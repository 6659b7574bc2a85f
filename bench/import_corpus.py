"""The bench corpus built the way a researcher loads MultiNLI: files through `import_pairs`.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_bench_x .venv/bin/python bench/import_corpus.py \\
        --pairs 433000 [--keep-files DIR]

(or `bench/run.py --build importers`). The same MultiNLI shape as bench/run.py's COPY corpus
(~144k premises with three hypotheses, ten genres, 40k dev/test pairs with five labels per 433k),
written as MultiNLI JSONL files and loaded by the `import_pairs` command, so the rows are what an
import leaves: every pair's `created_at` is the import's hour, the maintained aggregates are the
importer's, and the pairs are tagged with phenomena by the command after the import (as a
researcher's import is). Prints the import's and the tagging's pairs/s, and the tagger's own
speed on the same pairs without the database (the figure the import's tagging should reach).
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
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
if "bench" not in os.environ.get("DATABASE_URL", ""):
    os.environ["DATABASE_URL"] = "postgres://postgres@127.0.0.1:5432/nli_bench"

TRAINING_GENRES = ["fiction", "government", "slate", "telephone", "travel"]
HELD_OUT_GENRES = ["facetoface", "letters", "nineeleven", "oup", "verbatim"]
LABELS = ["entailment", "neutral", "contradiction"]
DATASET = "bench"
MULTINLI_PAIRS = 433_000
TAGGER_SAMPLE = 2000  # pairs the tagger alone is timed on


def _sentence(rng, words, length):
    return " ".join(rng.choices(words, k=length)).capitalize() + "."


def write_files(pairs_total, directory, seed=2018):
    """MultiNLI JSONL files (dev, test with five labels; train with the author's) in `directory`;
    returns {split: path}."""
    rng = random.Random(seed)
    common = "the a man woman dog runs is not city he she they all some never must will can who what"
    words = [f"w{i}" for i in range(5000)] + (common + " yesterday think believe more most if there than").split() * 40
    validated_total = round(40_000 * pairs_total / MULTINLI_PAIRS)
    paths = {split: Path(directory) / f"bench_{split}.jsonl" for split in ("dev", "test", "train")}
    handles = {split: open(path, "w", encoding="utf-8") for split, path in paths.items()}  # noqa: SIM115
    written = premise_id = 0
    try:
        while written < pairs_total:
            premise_id += 1
            validated = written < validated_total
            if validated:
                split = "dev" if premise_id % 2 else "test"
                genre = (TRAINING_GENRES + HELD_OUT_GENRES)[premise_id % 10]
            else:
                split, genre = "train", TRAINING_GENRES[premise_id % 5]
            premise = _sentence(rng, words, rng.randint(8, 40))
            for author_label in LABELS:
                if written >= pairs_total:
                    break
                written += 1
                labels = [author_label] + (
                    [rng.choice(LABELS) if rng.random() < 0.3 else author_label for _ in range(4)] if validated else []
                )
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


def empty_corpus():
    """Remove the bench dataset's rows (as bench/run.py's generate does) and set up genres."""
    from django.core.management import call_command
    from django.db import connection, transaction

    from corpus import tallies
    from corpus.models import Dataset, Genre, PromptFamily

    call_command("migrate", verbosity=0)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE validation_validationlabel, validation_validationclaim, collection_pair, "
            "collection_writingclaim, collection_premisereport, collection_premise, collection_worker, "
            "auth_user CASCADE"
        )
        Dataset.objects.filter(slug=DATASET).delete()
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
        for slug in TRAINING_GENRES + HELD_OUT_GENRES:
            Genre.objects.get_or_create(
                slug=slug, defaults={"name": slug, "is_training": slug in TRAINING_GENRES, "family": family}
            )
    tallies.check_and_rebuild()  # the aggregates of the truncated rows go too


def tagger_alone(paths, sample=TAGGER_SAMPLE):
    """Pairs/s of the tagger on the first `sample` train pairs, no database (n_process=1, as the
    command runs it)."""
    from artifacts.services import get_tagger

    tagger = get_tagger()
    pairs = []
    with open(paths["train"], encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            pairs.append((record["sentence1"], record["sentence2"]))
            if len(pairs) >= sample:
                break
    list(tagger.tag_pairs(pairs[:100], batch_size=500))  # warm
    started = time.perf_counter()
    list(tagger.tag_pairs(pairs, batch_size=500))
    return len(pairs) / (time.perf_counter() - started)


def copy_tags():
    """Tags for the pairs the tagger did not see (train, unless --tag-all), each copied from a
    tagged pair of the same generator: on two shared cores the tagger runs at ~100-140 pairs/s,
    so tagging all 433k would take about an hour; the pages read the same rows either way.
    Returns the rows inserted."""
    from django.db import connection

    from artifacts.phenomena import PHENOMENON_NAMES

    columns = ", ".join(PHENOMENON_NAMES)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            WITH tagged AS (SELECT row_number() OVER (ORDER BY pair_id) - 1 AS k, * FROM artifacts_pairtags),
                 size AS (SELECT count(*) AS n FROM tagged),
                 untagged AS (
                   SELECT p.id, row_number() OVER (ORDER BY p.id) - 1 AS k FROM collection_pair p
                   WHERE NOT EXISTS (SELECT 1 FROM artifacts_pairtags t WHERE t.pair_id = p.id))
            INSERT INTO artifacts_pairtags (pair_id, {columns}, tagger, tagged_at)
            SELECT u.id, {", ".join(f"t.{name}" for name in PHENOMENON_NAMES)}, 'bench: copied', now()
            FROM untagged u, size JOIN tagged t ON true WHERE t.k = u.k % size.n
            """
        )
        return cursor.rowcount


def build(pairs_total, workers_needed=0, keep_files=None, progress=True, tag_all=False):
    """Empty the bench corpus and import one of `pairs_total` pairs, tags included; returns a dict
    of figures (seconds, pairs/s of import, tagging and the tagger alone). The dev and test files
    are tagged by the import command; train too with `tag_all`, else their tags are copied."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from artifacts.models import TaggingJob
    from corpus.models import Worker

    empty_corpus()
    figures: dict[str, float] = {"pairs": pairs_total}
    with tempfile.TemporaryDirectory(prefix="nli-bench-import-") as tmp:
        directory = keep_files or tmp
        paths = write_files(pairs_total, directory)
        figures["tagger_alone_pairs_per_s"] = tagger_alone(paths)
        started = time.perf_counter()
        for split in ("dev", "test", "train"):  # each import tags its pairs after committing them
            call_command(
                "import_pairs",
                str(paths[split]),
                dataset=DATASET,
                split=split,
                no_progress=not progress,
                no_tag=split == "train" and not tag_all,
            )
        seconds = time.perf_counter() - started
    if not tag_all:
        figures["tags_copied"] = copy_tags()
    jobs = list(TaggingJob.objects.filter(dataset__slug=DATASET, status="done"))
    figures["tagged"] = sum(job.done for job in jobs)
    figures["tagging_seconds"] = sum(
        (job.finished_at - job.created_at).total_seconds() for job in jobs if job.finished_at
    )
    figures["import_seconds"] = seconds - figures["tagging_seconds"]
    figures["import_pairs_per_s"] = pairs_total / figures["import_seconds"]
    figures["tagging_pairs_per_s"] = figures["tagged"] / max(figures["tagging_seconds"], 1e-9)
    if workers_needed:
        users = User.objects.bulk_create(User(username=f"bench{i}") for i in range(workers_needed))
        Worker.objects.bulk_create(Worker(user=user) for user in users)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return figures


def compare_tagging(sample=500, rounds=3, dataset_slug=None, processes=None):
    """The tagging job's pairs/s against the tagger's alone on the same pairs, interleaved in one
    process so both see the same load: the job re-tags `sample` pairs of the bench dataset whose
    tags it removes first. Returns [(job pairs/s, tagger pairs/s)] per round.

    The job chooses as it would for a researcher: from ARTIFACTS_TAGGING_PROCESS_MIN_PAIRS (20,000)
    pairs on, it tags in a process of its own while its process reads and stores, and that
    process's start (~3 s) is in the job's time; the tagger alone tags in this process. Every
    other pair of the dataset must be tagged already (bench/run.py's corpus has no tags: give it
    some, e.g. copied ones, first), or the first round tags them all.

    `dataset_slug` another dataset (bench/run.py's "bench" is written on the platform, so its pairs
    get parse trees: each round empties the sample's parses and its premises' first, and the job
    tags and parses them); `processes` the job's tagging processes (default: as it chooses)."""
    from django.db import connection

    from artifacts.models import PairTags
    from artifacts.services import get_tagger, run_tagging_job, start_tagging
    from corpus.models import Dataset, Pair, Premise

    dataset = Dataset.objects.get(slug=dataset_slug or DATASET)
    tagger = get_tagger()
    rows = list(
        Pair.objects.filter(dataset=dataset).order_by("-pk").values_list("pk", "premise__text", "hypothesis")[:sample]
    )[::-1]
    texts = [(premise, hypothesis) for _, premise, hypothesis in rows]
    list(tagger.tag_pairs(texts[:50], batch_size=500))  # warm
    results = []
    for _ in range(rounds):
        PairTags.objects.filter(pair_id__in=[pk for pk, _, _ in rows]).delete()
        tables = ["artifacts_pairtags"]
        if not dataset.is_imported:
            sampled = Pair.objects.filter(dataset=dataset, pk__gte=rows[0][0])
            sampled.update(parse="", binary_parse="")
            Premise.objects.filter(pk__in=sampled.values("premise_id")).update(parse="", binary_parse="")
            tables += ["collection_pair", "collection_premise"]
        with connection.cursor() as cursor:  # as autovacuum would (off on these machines)
            for table in tables:
                cursor.execute(f"VACUUM ANALYZE {table}")
        started = time.perf_counter()
        job = run_tagging_job(start_tagging(dataset, queue=False).pk, tagger=tagger, processes=processes)
        job_rate = job.done / (time.perf_counter() - started)
        started = time.perf_counter()
        list(tagger.tag_pairs(texts, batch_size=500))
        results.append((job_rate, len(texts) / (time.perf_counter() - started)))
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=43_000)
    parser.add_argument("--workers", type=int, default=1250, help="worker accounts to create (pages, claims)")
    parser.add_argument("--keep-files", help="write the JSONL files here and keep them")
    parser.add_argument("--tag-all", action="store_true", help="the tagger tags train too (about an hour at 433k)")
    parser.add_argument(
        "--compare-tagging",
        type=int,
        metavar="N",
        help="only compare the job with the tagger on N pairs already here (60000: a job of its own process)",
    )
    parser.add_argument("--dataset", help=f"--compare-tagging on this dataset (default {DATASET})")
    parser.add_argument("--processes", type=int, help="--compare-tagging: the job's tagging processes")
    parser.add_argument("--rounds", type=int, default=3, help="--compare-tagging: rounds")
    args = parser.parse_args()
    from run import ensure_database  # bench/run.py

    ensure_database()
    import django

    django.setup()
    if args.compare_tagging:
        for job_rate, tagger_rate in compare_tagging(
            args.compare_tagging, rounds=args.rounds, dataset_slug=args.dataset, processes=args.processes
        ):
            print(
                f"tagging job {job_rate:.0f} pairs/s, tagger alone {tagger_rate:.0f} pairs/s ({job_rate / tagger_rate:.2f}x)"
            )
        print("load average", os.getloadavg())
        return
    figures = build(args.pairs, args.workers, args.keep_files, tag_all=args.tag_all)
    print(json.dumps(figures))
    print(
        f"import {figures['import_pairs_per_s']:.0f} pairs/s; tagging after it {figures['tagging_pairs_per_s']:.0f} "
        f"pairs/s vs the tagger alone {figures['tagger_alone_pairs_per_s']:.0f} pairs/s "
        f"({figures['tagging_pairs_per_s'] / figures['tagger_alone_pairs_per_s']:.2f}x)"
    )


if __name__ == "__main__":
    main()
