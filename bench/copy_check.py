"""The copy check's false flags on honest writers, and the cost of its lookup.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> .venv/bin/python bench/copy_check.py [--skip-cost]

1. False flags: SNLI dev's real hypotheses (../shared/data/snli_1.0_dev.jsonl), each caption's
   writing a premise, replayed in file order as distinct writers of three premises each, each in a
   study session of its own, through the server's own lookup and record (authorship.copies), as
   the submit runs them. Counted: hypotheses flagged `copy` (those found as paraphrases apart), and
   writers whose session would be flagged (a third of its hypotheses, judgements.session_is_flagged),
   with the trigram rule's flags alone too.
2. Cost (PostgreSQL only): the submit's lookup (copies.nearest_sql inside copies.band_lookup,
   three hypotheses a statement as a submit sends them) explained with ANALYZE on a table of the same shape and indexes holding every distinct real
   sentence here (SNLI dev, MPE, DNC: about 72k) twice, 143k rows: never analysed, then right after
   ANALYZE (fresh statistics), then after it doubled to 286k with no ANALYZE (stale statistics;
   autovacuum off on that table); 200 SNLI dev hypotheses as probes each time, three a statement.
3. Recall (PostgreSQL only): of the pairs of SNLI dev's hypotheses the trigram rule holds alike, the
   share that the band lookup finds (copy_bands), and the candidates it reads.

The database named must be migrated (`manage.py migrate`); the bench adds a dataset of its own and
the table `bench_copy_lookup`, which it drops at the end.
"""

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
WRITINGS_PER_WRITER = 3
LOOKUP_TABLE = "bench_copy_lookup"
PROBES = 200


def ready() -> None:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()


def snli_writings() -> list[dict[str, str]]:
    """Each SNLI dev writing (a caption's r1, r2, ... round), {label: hypothesis}, in file order."""
    writings: dict[str, dict[str, str]] = {}
    premises: dict[str, str] = {}
    labels = {"e": "entailment", "n": "neutral", "c": "contradiction"}
    for line in (DATA / "snli_1.0_dev.jsonl").open():
        row = json.loads(line)
        key = row["pairID"][:-1]
        writings.setdefault(key, {})[labels[row["pairID"][-1]]] = row["sentence2"]
        premises[key] = row["sentence1"]
    return [{"premise": premises[key], **texts} for key, texts in writings.items()]


def false_flags() -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from authorship import copies, judgements
    from authorship.models import WrittenSentence
    from bench.attacks._participant import wilson
    from corpus.models import Dataset, Genre, Label, Pair, Premise, PromptFamily, Split, Worker
    from corpus.services import create_pairs
    from crowd.models import Study, StudySession

    nonce = time.time_ns() % 10**9
    family, _ = PromptFamily.objects.get_or_create(
        slug="bench-copies",
        defaults={
            "name": "Bench",
            "instructions": "Write.",
            "entailment_prompt": "Definitely correct",
            "neutral_prompt": "Might be correct",
            "contradiction_prompt": "Definitely incorrect",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug="bench-copies", defaults={"name": "Bench", "family": family, "is_training": True}
    )
    dataset = Dataset.objects.create(slug=f"bench-copies-{nonce}", name="bench copies")
    study = Study.objects.create(slug=f"bench-copies-{nonce}", name="bench", dataset=dataset, completion_code="B")
    writings = snli_writings()
    hypotheses = flagged_hypotheses = writers = flagged_writers = paraphrases = 0
    writers_flagged_without_paraphrases = 0
    started = time.monotonic()
    lookup_seconds = 0.0
    examples: list[str] = []
    for first in range(0, len(writings), WRITINGS_PER_WRITER):
        user = get_user_model().objects.create(username=f"bench-copies-{nonce}-{first}")
        worker = Worker.objects.create(user=user)
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"{nonce}-{first}")
        copied = written = copied_by_trigrams = 0
        for number, writing in enumerate(writings[first : first + WRITINGS_PER_WRITER]):
            with transaction.atomic():
                premise = Premise.objects.create(
                    dataset=dataset,
                    genre=genre,
                    prompt_id=f"{first}-{number}",
                    split=Split.TRAIN,
                    text=writing["premise"],
                )
                labels = [label for label in ("entailment", "neutral", "contradiction") if label in writing]
                pairs = create_pairs(
                    dataset,
                    Split.TRAIN,
                    [
                        Pair(
                            premise=premise,
                            pair_id=f"{premise.prompt_id}{label[0]}",
                            hypothesis=writing[label],
                            author_label=Label(label),
                            author=worker,
                        )
                        for label in labels
                    ],
                    [[label] for label in labels],
                )
                tick = time.monotonic()
                found = copies.copies_of(worker, session, pairs)
                lookup_seconds += time.monotonic() - tick
                copies.record_written_sentences(worker, session, pairs, found)
            written += len(pairs)
            copied += sum(copy is not None for copy in found)
            copied_by_trigrams += sum(copy is not None and not copy.paraphrase for copy in found)
            paraphrases += sum(copy is not None and copy.paraphrase for copy in found)
            for pair, copy in zip(pairs, found, strict=True):
                if copy is not None and len(examples) < 24:
                    earlier = WrittenSentence.objects.get(pk=copy.sentence_id).pair.hypothesis
                    kind = "paraphrase" if copy.paraphrase else "trigram"
                    examples.append(f"{pair.hypothesis!r} ~ {earlier!r} ({kind} {copy.similarity:.2f})")
        hypotheses += written
        flagged_hypotheses += copied
        writers += 1
        flagged_writers += judgements.session_is_flagged(copied, written)
        writers_flagged_without_paraphrases += judgements.session_is_flagged(copied_by_trigrams, written)
    return {
        "hypotheses": hypotheses,
        "flagged_hypotheses": flagged_hypotheses,
        "hypothesis_rate": round(flagged_hypotheses / hypotheses, 4),
        "hypothesis_interval": wilson(flagged_hypotheses, hypotheses),
        "writers": writers,
        "flagged_writers": flagged_writers,
        "writer_rate": round(flagged_writers / writers, 4),
        "writer_interval": wilson(flagged_writers, writers),
        "paraphrases": paraphrases,
        "writers_flagged_by_the_trigram_rule_alone": writers_flagged_without_paraphrases,
        "mean_lookup_ms_per_submit": round(1000 * lookup_seconds / len(writings), 2),
        "seconds": round(time.monotonic() - started, 1),
        "examples": examples,
    }


def real_sentences() -> list[str]:
    """Every distinct real sentence here: SNLI dev, MPE, DNC (premises and hypotheses)."""
    found: set[str] = set()
    for line in (DATA / "snli_1.0_dev.jsonl").open():
        row = json.loads(line)
        found.update((row["sentence1"], row["sentence2"]))
    for name in ("mpe_train.txt", "mpe_dev.txt"):
        for line in (DATA / "mpe" / name).open():
            cells = line.rstrip("\n").split("\t")
            if len(cells) >= 6 and cells[0] != "ID":
                found.update(cell.split("/", 1)[-1] for cell in cells[1:6])
    for path in sorted((DATA / "dnc").glob("*/*_data.json")):
        for row in json.loads(path.read_text()):
            found.update((row["context"], row["hypothesis"]))
    return sorted(found)


def explain(cursor, probes: list[str]) -> dict[str, object]:
    from authorship import copies

    sql = "EXPLAIN (ANALYZE, FORMAT JSON) " + copies.nearest_sql(
        LOOKUP_TABLE, "NOT (w.worker_id = %s AND w.study_session_id = %s)"
    )
    times: list[float] = []
    nodes: dict[str, int] = defaultdict(int)
    # Three at a time, as a writing submit looks up its three hypotheses in one statement.
    for start in range(0, len(probes), 3):
        batch = probes[start : start + 3]
        with copies.band_lookup(cursor):
            cursor.execute(sql, [batch, [-1] * len(batch), copies.COPY_SIMILARITY, -1, -1])
            plan = cursor.fetchone()[0]
        plan = plan[0] if isinstance(plan, list) else json.loads(plan)[0]
        times.append(plan["Planning Time"] + plan["Execution Time"])
        stack = [plan["Plan"]]
        while stack:
            node = stack.pop()
            nodes[node["Node Type"] + (f" on {node['Index Name']}" if "Index Name" in node else "")] += 1
            stack.extend(node.get("Plans", []))
    times.sort()
    return {
        "median_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
        "max_ms": round(times[-1], 2),
        "plan_nodes": dict(nodes),
    }


def lookup_cost() -> dict[str, object]:
    from django.db import connection, transaction

    from authorship import copies
    from authorship.models import WrittenSentence

    sentences = [key for key in map(copies.copy_key, real_sentences()) if key]
    probes = [copies.copy_key(text) for writing in snli_writings()[:PROBES] for text in list(writing.values())[1:2]]
    source = WrittenSentence._meta.db_table
    result: dict[str, object] = {}
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {LOOKUP_TABLE}")
        cursor.execute(f"CREATE TABLE {LOOKUP_TABLE} (LIKE {source} INCLUDING DEFAULTS INCLUDING INDEXES)")
        cursor.execute(f"ALTER TABLE {LOOKUP_TABLE} SET (autovacuum_enabled = false)")

    def fill(round_number: int) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            offset = round_number * len(sentences)
            rows = [
                (n + offset, n + offset, n % 50_000 + 1, (n + offset) % 20_000 + 1, key, time.time())
                for n, key in enumerate(sentences)
            ]
            # The signature and own words are the paraphrase rule's, not looked up here: the key and none.
            cursor.executemany(
                f"INSERT INTO {LOOKUP_TABLE} (id, pair_id, premise_id, worker_id, dataset_id, normalised,"
                " signature, own_words, created_at) VALUES (%s, %s, %s, %s, 1, %s, %s, '{}', to_timestamp(%s))",
                [(*row[:5], row[4], row[5]) for row in rows],
            )

    def measured(label: str, **extra: object) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*) FROM {LOOKUP_TABLE}")
            rows = cursor.fetchone()[0]
            with transaction.atomic():
                result[label] = {"rows": rows, **extra, **explain(cursor, probes)}

    # Never analysed (a table filled since the last ANALYZE, autovacuum off), then fresh
    # statistics, then stale ones: the table doubled since its ANALYZE.
    fill(0)
    fill(1)
    measured("never_analysed")
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {LOOKUP_TABLE}")
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s AND indexdef LIKE %s",
            [LOOKUP_TABLE, "%copy_bands%"],
        )
        result["band_index"] = cursor.fetchall()
    measured("fresh")
    fill(2)
    fill(3)
    measured("stale", analysed_at_rows=result["fresh"]["rows"])  # type: ignore[index]
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {LOOKUP_TABLE}")
    return result


def band_recall() -> dict[str, object]:
    """Every pair of SNLI dev's distinct hypotheses of five words or more that is at least
    COPY_SIMILARITY alike by pg_trgm (the trigram index's `%`, the rule to the letter), and how many
    of them share a band (copy_bands): the pairs the band lookup would miss. Also the candidates it
    reads: pairs sharing a band, alike or not."""
    from django.db import connection, transaction

    from authorship import copies

    keys = sorted(
        {
            key
            for writing in snli_writings()
            for name, text in writing.items()
            if name != "premise" and copies.can_be_a_copy(key := copies.copy_key(text))
        }
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMP TABLE bench_recall (id serial PRIMARY KEY, key text, bands integer[]) ON COMMIT DROP"
        )
        cursor.executemany("INSERT INTO bench_recall (key) VALUES (%s)", [(key,) for key in keys])
        cursor.execute("UPDATE bench_recall SET bands = copy_bands(key)")
        cursor.execute("CREATE INDEX ON bench_recall USING gin (key gin_trgm_ops)")
        cursor.execute("CREATE INDEX ON bench_recall USING gin (bands)")
        cursor.execute("ANALYZE bench_recall")
        cursor.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, true)", [str(copies.COPY_SIMILARITY)])
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE a.bands && b.bands),"
            " count(*) FILTER (WHERE similarity(a.key, b.key) < 0.9),"
            " count(*) FILTER (WHERE similarity(a.key, b.key) < 0.9 AND a.bands && b.bands)"
            " FROM bench_recall a JOIN bench_recall b ON a.key % b.key AND a.id < b.id"
        )
        alike, found, alike_under_09, found_under_09 = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM bench_recall a JOIN bench_recall b ON a.bands && b.bands AND a.id < b.id")
        (sharing_a_band,) = cursor.fetchone()
    return {
        "sentences": len(keys),
        "pairs_alike": alike,
        "pairs_alike_sharing_a_band": found,
        "pairs_alike_under_0_9": alike_under_09,
        "of_those_sharing_a_band": found_under_09,
        "pairs_sharing_a_band": sharing_a_band,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-cost", action="store_true", help="only the false-flag replay")
    parser.add_argument("--skip-replay", action="store_true", help="only the lookup's cost (and the recall)")
    args = parser.parse_args()
    ready()
    from django.db import connection

    report: dict[str, object] = {"database": connection.settings_dict["NAME"]}
    if not args.skip_replay:
        report["false_flags"] = false_flags()
        print(json.dumps(report["false_flags"], indent=2), flush=True)
    report["band_recall"] = band_recall()
    print(json.dumps(report["band_recall"], indent=2), flush=True)
    if not args.skip_cost:
        report["lookup_cost"] = lookup_cost()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
