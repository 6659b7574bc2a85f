"""The background probes that asked "anything new?" of every pair, at MultiNLI scale.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/tagging_probes.py \\
        [--pairs 433000] [--other 20000] [--repeat 5]

A throwaway database (bench/throwaway_database.py) gets --pairs pairs in dataset "bench" and
--other in "bench-other" (made after, so every one of its pairs is newer), copied by SQL from one
pair made through the services (`create_pairs`), three pairs a premise, one label row a pair, a day
old. The tallies are rebuilt from the tables (`check_and_rebuild`), every pair gets a tag row as a
finished tagging job would leave it (and the job its mark), then 300 pairs and 300 labels arrive
through the services and the tables are ANALYZEd. Each probe, old statement and new, best of
--repeat, with its EXPLAIN ANALYZE:

- the arrival task's "anything untagged?" (`artifacts.services.pairs_arrived`): the anti-join of
  the pairs against the tags, and the tallies' two sums (`artifacts.tag_tally.untagged_pairs`);
- a tagging job's first batch: from the first untagged pair (an anti-join to find it), and from
  the last job's mark (a range of the pairs' primary key, then the tags of that range);
- the monitor's "enough new pairs?" (`artifacts.monitoring.refresh_if_due`): a count of the
  dataset's pairs, and the pair tally's sum.
"""

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.throwaway_database import run_with_django


def best_ms(run, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return min(times)


def explained(sql, params):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) {sql}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


def clone(model, template_pk, count, overrides):
    """`count` copies of row `template_pk` of `model`'s table, column values from `overrides` (SQL
    expressions of g, 1..count) where given; the new ids, in order."""
    from django.db import connection

    table = model._meta.db_table
    columns = [field.column for field in model._meta.concrete_fields if not field.primary_key]
    values = [overrides.get(column, f't."{column}"') for column in columns]
    quoted = ", ".join(f'"{column}"' for column in columns)
    with connection.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{table}" ({quoted}) SELECT {", ".join(values)} FROM "{table}" t, '
            f"generate_series(1, %s) g WHERE t.id = %s ORDER BY g RETURNING id",
            [count, template_pk],
        )
        return [row[0] for row in cursor.fetchall()]


def fill(slug, pairs, genre, stamp):
    """A dataset of `pairs` pairs (three a premise) copied from one made through the services."""
    from django.db import connection

    from corpus.models import Dataset, Pair, Premise, Split, ValidationLabel
    from corpus.services import create_pairs

    dataset = Dataset.objects.create(slug=slug, name=slug, is_imported=True)
    premise = Premise.objects.create(
        dataset=dataset, genre=genre, split=Split.TRAIN, text="A man sleeps.", prompt_id="t"
    )
    (pair,) = create_pairs(
        dataset,
        Split.TRAIN,
        [
            Pair(
                dataset=dataset, premise=premise, pair_id="t", hypothesis="Nobody sleeps.", author_label="contradiction"
            )
        ],
        [["contradiction"]],
    )
    premises = clone(Premise, premise.pk, (pairs + 2) // 3, {"prompt_id": f"'{slug}-' || g", "text": "t.text || g"})
    first = premises[0]
    made = clone(
        Pair,
        pair.pk,
        pairs,
        {"pair_id": f"'{slug}-' || g", "premise_id": f"{first} + (g - 1) / 3", "hypothesis": "t.hypothesis || g"},
    )
    label = ValidationLabel.objects.get(pair=pair)
    labels = ValidationLabel._meta.db_table
    columns = [str(f.column) for f in ValidationLabel._meta.concrete_fields if not f.primary_key]
    values = [{"pair_id": "p.id", "created_at": "%s"}.get(column, f'l."{column}"') for column in columns]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {labels} ({', '.join(columns)}) SELECT {', '.join(values)} "
            f"FROM {labels} l, {Pair._meta.db_table} p WHERE l.id = %s AND p.dataset_id = %s AND p.id <> %s",
            [stamp, label.pk, dataset.pk, pair.pk],
        )
    return dataset, made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=433_000)
    parser.add_argument("--other", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    run_with_django("tagging_probes", lambda: run(args))


def run(args) -> None:
    from datetime import timedelta

    from django.db import connection
    from django.utils import timezone

    from artifacts import tag_tally
    from artifacts.models import PairTags, TaggingJob
    from artifacts.services import pairs_to_tag, untagged_batches, walked_to
    from base.long_tasks import JobStatus
    from corpus import tallies
    from corpus.models import Genre, Pair, Split
    from corpus.services import add_labels, create_pairs

    started = time.perf_counter()
    genre = Genre.objects.order_by("pk").first()  # the migrations seed the MultiNLI genres
    long_ago = timezone.now() - timedelta(days=1)
    bench, _ = fill("bench", args.pairs, genre, long_ago)
    other, _ = fill("bench-other", args.other, genre, long_ago)
    print(f"filled {args.pairs:,} + {args.other:,} pairs in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    tallies.check_and_rebuild(None, tallies.PAIRS_ONLY)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {PairTags._meta.db_table} (pair_id, tagger, tagged_at, "
            + ", ".join(name for name in tag_columns())
            + ") SELECT id, 'bench', now(), "
            + ", ".join("false" for _ in tag_columns())
            + f" FROM {Pair._meta.db_table}"
        )
    tallies.check_and_rebuild(None, tag_tally.TALLY)
    for dataset in (bench, other):
        mark = Pair.objects.filter(dataset=dataset).order_by("-pk").values_list("pk", flat=True)[0]
        TaggingJob.objects.create(dataset=dataset, status=JobStatus.DONE, walked_to=mark, total=0)
    print(f"tallies rebuilt and every pair tagged in {time.perf_counter() - started:.1f} s", flush=True)

    # Arrivals: a writing round's pairs (untagged), and labels on them (new, after the last run).
    premise = Pair.objects.filter(dataset=bench).order_by("-pk")[0].premise
    arrived = create_pairs(
        bench,
        Split.TRAIN,
        [
            Pair(
                dataset=bench, premise=premise, pair_id=f"new-{n}", hypothesis=f"A new one {n}.", author_label="neutral"
            )
            for n in range(300)
        ],
        [["neutral"]] * 300,
    )
    add_labels([(pair, "neutral", None) for pair in arrived])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    mark = walked_to(bench)

    probes = [
        (
            "arrival: anything untagged? (bench)",
            lambda: pairs_to_tag(bench).exists(),
            pairs_to_tag(bench).order_by()[:1],
            lambda: tag_tally.untagged_pairs(bench),
            None,
        ),
        (
            "arrival: anything untagged? (bench-other, 20k)",
            lambda: pairs_to_tag(other).exists(),
            pairs_to_tag(other).order_by()[:1],
            lambda: tag_tally.untagged_pairs(other),
            None,
        ),
        (
            "tagging job: its first batch of untagged pairs",
            lambda: next(untagged_batches(bench, False, 500)),
            pairs_to_tag(bench).order_by("pk").values_list("pk", flat=True)[:1],
            lambda: next(untagged_batches(bench, False, 500, after=mark, expected=300)),
            Pair.objects.filter(dataset=bench, pk__gt=mark).order_by("pk").values_list("pk", flat=True)[:2000],
        ),
        (
            "monitor: pairs of the dataset",
            lambda: Pair.objects.filter(dataset=bench).count(),
            None,
            lambda: tag_tally.tally_pairs(bench),
            None,
        ),
    ]
    assert tag_tally.untagged_pairs(bench) == 300 and pairs_to_tag(bench).count() == 300
    assert tag_tally.tally_pairs(bench) == Pair.objects.filter(dataset=bench).count()
    results = []
    for name, old, old_query, new, new_query in probes:
        before, after = best_ms(old, args.repeat), best_ms(new, args.repeat)
        results.append({"probe": name, "before_ms": round(before, 2), "after_ms": round(after, 2)})
        print(f"\n## {name}: {before:,.2f} ms -> {after:,.2f} ms", flush=True)
        for label, query in (("before", old_query), ("after", new_query)):
            if query is not None:
                sql, params = query.query.sql_with_params()
                print(f"### {label}\n{explained(sql, params)}")

    print("\n| probe | before ms | after ms |\n|---|---|---|")
    for row in results:
        print(f"| {row['probe']} | {row['before_ms']:,.2f} | {row['after_ms']:,.2f} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


def tag_columns():
    from artifacts.phenomena import PHENOMENON_NAMES

    return PHENOMENON_NAMES


if __name__ == "__main__":
    main()
