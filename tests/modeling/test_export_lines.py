"""The lines the export writes (writer.py): awkward text
reads back unchanged from both files, pages of any size write the same bytes, progress moves per
page and is saved for the dashboard while an export runs outside a transaction."""

import csv
import io
import json
from pathlib import Path

import pytest

from corpus.exclusions import set_workers_excluded
from corpus.models import Dataset, Label, Pair, ValidationLabel, Worker, WorkerExclusion
from corpus.services import add_label
from modeling.snapshots.services import create_snapshot, export_snapshot
from teams.models import default_team_id
from tests.modeling.conftest import FIVE_E, add_pair, add_premise, genre

pytestmark = pytest.mark.django_db

AWKWARD = [
    'quotes "inside" and a\ttab',
    "a newline\nand a carriage\rreturn",
    "backslash \\ and slash / and unicode café — 北京 😀",
    "control \x01\x1f characters and \b\f",
    '"starts with a quote',
    "",
    "line separator \u2028 paragraph \u2029 DEL \x7f",
]


def files_of(snapshot):
    folder = Path(snapshot.directory)
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.name != "manifest.json"}


def read_back(snapshot):
    """(JSONL records, TSV rows) of every split file, both in file order, as a reader gets them."""
    records, rows = [], []
    for name, content in files_of(snapshot).items():
        text = content.decode("utf-8")
        if name.endswith(".jsonl"):
            # Split on "\n" only: json.dumps escapes it, while U+2028 and friends stay as they are.
            records += [json.loads(line) for line in text.split("\n") if line]
        else:
            rows += list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t"))
    return records, rows


@pytest.mark.parametrize("unvalidated_gold", ["author", "-"])
def test_awkward_text_reads_back_unchanged_from_both_files(small_corpus, make_worker, unvalidated_gold):
    mini = Dataset.objects.get(slug="mini")
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    for index, text in enumerate(AWKWARD):
        premise = add_premise(mini, letters if index % 2 else fiction, ["train", "dev", "test"][index % 3], text)
        add_pair(mini, premise, text[::-1] or "x", [Label.NEUTRAL], needs_validation=index % 3 != 0, parse=text)
        pair = add_pair(mini, premise, f"{text} again", FIVE_E[:2])
        add_label(pair, Label.CONTRADICTION, worker=make_worker())
    # A validator whose labels leave the files once they are excluded.
    excluded = make_worker()
    add_label(pair, Label.ENTAILMENT, worker=excluded)
    set_workers_excluded(Worker.objects.filter(pk=excluded.pk), True, teams=[default_team_id()])

    snapshot = export_snapshot(create_snapshot(None, filters={"unvalidated_gold": unvalidated_gold}))
    records, rows = read_back(snapshot)

    assert len(records) == len(rows) == snapshot.row_count > 20
    for record, row in zip(records, rows, strict=True):
        for field in ("gold_label", "sentence1", "sentence2", "sentence2_parse", "pairID", "genre"):
            assert row[field] == record[field]
        assert [row[f"label{slot}"] for slot in range(1, 6) if row[f"label{slot}"]] == record["annotator_labels"]
    by_hypothesis = {record["sentence2"]: record for record in records}
    for index, text in enumerate(AWKWARD):
        assert by_hypothesis[f"{text} again"]["sentence1"] == text
        unvalidated = by_hypothesis[text[::-1] or "x"]
        assert unvalidated["sentence2_parse"] == text
        if index % 3 == 0:  # a train pair never sent to validation: gold by the unvalidated_gold filter
            assert unvalidated["gold_label"] == ("neutral" if unvalidated_gold == "author" else "-")
    assert by_hypothesis[f"{AWKWARD[-1]} again"]["annotator_labels"] == ["entailment", "entailment", "contradiction"]
    jsonl = b"".join(content for name, content in files_of(snapshot).items() if name.endswith(".jsonl"))
    assert "北京 😀".encode() in jsonl  # ensure_ascii=False: the text as written, not \u escapes


def test_progress_is_reported_per_page(small_corpus):
    seen = []
    export_snapshot(create_snapshot(None), progress=lambda done, total: seen.append((done, total)), page_size=5)
    assert seen == [(5, 12), (10, 12), (12, 12)]


@pytest.mark.parametrize(
    "filters, healed_rows",
    [
        ({}, 2),
        ({"genres": ["fiction"], "splits": ["dev", "test"]}, 1),
        ({"gold_only": True}, 2),
        ({"min_labels": 5, "splits": ["test"]}, 1),
        ({"full_agreement": True}, 0),
        ({"drop_ungrammatical": True}, 2),
    ],
)
def test_healed_pairs_and_filters_write_the_same_bytes_in_pages_of_any_size(
    small_corpus, make_worker, filters, healed_rows
):
    """A healed pair (a replacement label beyond position 5) lists its five counted labels; pages of
    three pairs split healed pairs, filtered pairs and their labels across page ends, and write the
    same files as one page."""
    mini = Dataset.objects.get(slug="mini")
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    guesser = make_worker()
    healed = []
    for index in range(6):
        premise = add_premise(mini, fiction if index % 2 else letters, ["dev", "test"][index % 2], f"premise {index}")
        pair = add_pair(mini, premise, f"hypothesis {index}", [Label.ENTAILMENT])
        for label in (Label.ENTAILMENT, Label.ENTAILMENT, Label.NEUTRAL):
            add_label(pair, label, worker=make_worker())
        if index in (1, 4):
            add_label(pair, Label.CONTRADICTION, worker=guesser)
            healed.append(pair)
    set_workers_excluded(Worker.objects.filter(pk=guesser.pk), True, teams=[default_team_id()])
    for pair in healed:
        add_label(pair, Label.NEUTRAL, worker=make_worker())  # position 6, a replacement
    assert ValidationLabel.objects.filter(position__gt=5).count() == 2
    # One ungrammatical hypothesis (2 of 3 judges: major issues) and one disputed (1 of 2).
    from corpus.models import Grammaticality, GrammaticalityJudgment

    first, second = Pair.objects.filter(hypothesis__in=["hypothesis 0", "hypothesis 2"]).order_by("pk")
    for pair, judgments in ((first, ["major", "major", "none"]), (second, ["major", "minor"])):
        GrammaticalityJudgment.objects.bulk_create(
            GrammaticalityJudgment(pair=pair, judgment=Grammaticality(j)) for j in judgments
        )

    small_pages = export_snapshot(create_snapshot(None, filters=filters), page_size=3)
    one_page = export_snapshot(create_snapshot(None, filters=filters))

    assert small_pages.row_count == one_page.row_count >= 1
    assert files_of(small_pages) == files_of(one_page)
    exported = b"".join(files_of(small_pages).values())
    if not filters or filters.get("drop_ungrammatical"):
        # Only the hypothesis most judges found ungrammatical is left out.
        assert (b"hypothesis 0" in exported, b"hypothesis 2" in exported) == (not filters, True)
    # The healed pairs list their five counted labels in order, the excluded guesser's left out.
    jsonl = b"".join(content for name, content in files_of(small_pages).items() if name.endswith(".jsonl")).decode()
    assert (
        jsonl.count('"annotator_labels": ["entailment", "entailment", "entailment", "neutral", "neutral"]')
        == healed_rows
    )


def committed_corpus(make_worker):
    """Rows written straight to their tables, as a bulk load leaves them: nothing queues a task
    (the session's Celery worker would otherwise tag and refresh monitors beside the test)."""
    from tests import factories

    corpus = Dataset.objects.create(slug="committed", name="committed")
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    excluded = make_worker()
    WorkerExclusion.objects.create(worker=excluded, team=corpus.team)  # with its labels' marks below
    validators = [make_worker() for _ in range(5)]
    labels = []
    for index, text in enumerate(AWKWARD + [f"plain premise {n}" for n in range(6)]):
        premise = factories.premise(
            corpus, letters if index % 2 else fiction, ["train", "dev", "test"][index % 3], text
        )
        pair = Pair.objects.create(
            dataset=corpus,
            premise=premise,
            pair_id=f"c{index}",
            hypothesis=text[::-1] or "x",
            author_label=Label.NEUTRAL,
            label_count=1,
            neutral_votes=1,
            parse=text,
        )
        labels.append(ValidationLabel(pair=pair, position=1, label=Label.NEUTRAL))
        if index % 3:
            workers = [*validators[:3], excluded, validators[3]] if index % 4 == 1 else validators[:4]
            # index % 4 == 1: position 5 is an excluded worker's, position 6 its replacement (a healed pair).
            for position, worker in enumerate(workers, start=2):
                labels.append(
                    ValidationLabel(
                        pair=pair,
                        position=position,
                        worker=worker,
                        label=[Label.ENTAILMENT, Label.CONTRADICTION][position % 2],
                        excluded=worker == excluded,
                    )
                )
    ValidationLabel.objects.bulk_create(labels)
    return corpus


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_stored_progress_moves_while_the_export_runs(make_worker):
    """A real export (a task's or the command's) opens no transaction around the files: the
    snapshot's stored progress, which the dashboard reads, moves after every page, and reaches 1.0
    only once the files are in place."""
    from django.db import connection

    from modeling.models import Snapshot

    committed_corpus(make_worker)
    assert ValidationLabel.objects.filter(position=6).exists()
    assert not connection.in_atomic_block
    snapshot = create_snapshot(None)
    seen = []

    def progress(done, total):
        seen.append((done, total, Snapshot.objects.get(pk=snapshot.pk).progress))

    export_snapshot(snapshot, progress=progress, page_size=5)
    assert [(done, total) for done, total, _ in seen] == [(5, 13), (10, 13), (13, 13)]
    for done, total, stored in seen:
        assert stored == pytest.approx(min(done / total, 0.99))
    snapshot.refresh_from_db()
    assert snapshot.progress == 1.0
