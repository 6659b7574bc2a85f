"""The PostgreSQL export (lines made by the database) writes the same bytes as the Python path
(export_record + json.dumps + csv.writer) on the same data: every file, every hash."""
from pathlib import Path

import pytest

from corpus.counters import add_label, set_workers_excluded
from corpus.models import Label, ValidationLabel, Worker
from modeling.snapshots import services
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import FIVE_E, add_pair, add_premise, genre

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

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


@pytest.mark.parametrize("unvalidated_gold", ["author", "-"])
def test_database_lines_are_byte_identical_to_the_python_writer(small_corpus, make_worker, monkeypatch, unvalidated_gold):
    from corpus.models import Dataset

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
    set_workers_excluded(Worker.objects.filter(pk=excluded.pk), True)

    filters = {"unvalidated_gold": unvalidated_gold}
    database = export_snapshot(create_snapshot(None, filters=filters))
    monkeypatch.setattr(services, "DATABASE_LINES", False)
    python = export_snapshot(create_snapshot(None, filters=filters))

    assert database.row_count == python.row_count > 20
    assert files_of(database) == files_of(python)
    assert database.content_hash == python.content_hash


def test_progress_is_reported_per_page_on_the_database_path(small_corpus):
    seen = []
    export_snapshot(create_snapshot(None), progress=lambda done, total: seen.append((done, total)), page_size=5)
    assert seen == [(5, 12), (10, 12), (12, 12)]


@pytest.mark.parametrize("filters, healed_rows", [
    ({}, 2), ({"genres": ["fiction"], "splits": ["dev", "test"]}, 1), ({"gold_only": True}, 2),
])
def test_pages_with_and_without_replacement_labels_are_byte_identical(small_corpus, make_worker, monkeypatch, filters,
                                                                       healed_rows):
    """A healed pair (a replacement label beyond position 5) takes the window-function labels query;
    the pages around it the window-free one. Small pages put both kinds in one export, and the
    premise filters (split, genre) are probed per pair on the database path."""
    from corpus.models import Dataset

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
    set_workers_excluded(Worker.objects.filter(pk=guesser.pk), True)
    for pair in healed:
        add_label(pair, Label.NEUTRAL, worker=make_worker())  # position 6, a replacement
    assert ValidationLabel.objects.filter(position__gt=5).count() == 2

    database = export_snapshot(create_snapshot(None, filters=filters), page_size=3)
    monkeypatch.setattr(services, "DATABASE_LINES", False)
    python = export_snapshot(create_snapshot(None, filters=filters), page_size=3)

    assert database.row_count == python.row_count > 4
    assert files_of(database) == files_of(python)
    # The healed pairs list their five counted labels in order, the excluded guesser's left out.
    jsonl = b"".join(content for name, content in files_of(database).items() if name.endswith(".jsonl")).decode()
    assert jsonl.count('"annotator_labels": ["entailment", "entailment", "entailment", "neutral", "neutral"]') == healed_rows


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_copy_streams_on_its_own_connection_and_progress_is_saved(small_corpus, monkeypatch):
    """A real export (a task's or the command's) opens no transaction around the files: the COPY
    then runs on a second connection, and the snapshot's stored progress moves while it streams."""
    from django.db import connection

    from modeling.models import Snapshot

    assert not connection.in_atomic_block
    snapshot = create_snapshot(None)
    seen = []

    def progress(done, total):
        seen.append((done, total, Snapshot.objects.get(pk=snapshot.pk).progress))

    database = export_snapshot(snapshot, progress=progress, page_size=5)
    assert seen[:2] == [(5, 12, pytest.approx(5 / 12)), (10, 12, pytest.approx(10 / 12))]
    monkeypatch.setattr(services, "DATABASE_LINES", False)
    python = export_snapshot(create_snapshot(None))
    assert files_of(database) == files_of(python)
