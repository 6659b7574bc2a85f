"""The PostgreSQL export (lines made by the database) writes the same bytes as the Python path
(export_record + json.dumps + csv.writer) on the same data: every file, every hash."""

from pathlib import Path

import pytest

from corpus.counters import add_label, set_workers_excluded
from corpus.models import Dataset, Label, Pair, ValidationLabel, Worker
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
def test_database_lines_are_byte_identical_to_the_python_writer(
    small_corpus, make_worker, monkeypatch, unvalidated_gold
):
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
def test_pages_with_and_without_replacement_labels_are_byte_identical(
    small_corpus, make_worker, monkeypatch, filters, healed_rows
):
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
    # One ungrammatical hypothesis (2 of 3 judges: major issues) and one disputed (1 of 2).
    from corpus.models import Grammaticality, GrammaticalityJudgment

    first, second = Pair.objects.filter(hypothesis__in=["hypothesis 0", "hypothesis 2"]).order_by("pk")
    for pair, judgments in ((first, ["major", "major", "none"]), (second, ["major", "minor"])):
        GrammaticalityJudgment.objects.bulk_create(
            GrammaticalityJudgment(pair=pair, judgment=Grammaticality(j)) for j in judgments
        )

    database = export_snapshot(create_snapshot(None, filters=filters), page_size=3)
    monkeypatch.setattr(services, "DATABASE_LINES", False)
    python = export_snapshot(create_snapshot(None, filters=filters), page_size=3)

    assert database.row_count == python.row_count >= 1
    assert files_of(database) == files_of(python)
    exported = b"".join(files_of(database).values())
    if not filters or filters.get("drop_ungrammatical"):
        # Only the hypothesis most judges found ungrammatical is left out.
        assert (b"hypothesis 0" in exported, b"hypothesis 2" in exported) == (not filters, True)
    # The healed pairs list their five counted labels in order, the excluded guesser's left out.
    jsonl = b"".join(content for name, content in files_of(database).items() if name.endswith(".jsonl")).decode()
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
    Worker.objects.filter(pk=excluded.pk).update(is_excluded=True)
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
                    )
                )
    ValidationLabel.objects.bulk_create(labels)
    return corpus


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("streams", [1, 2])
def test_outside_a_transaction_copies_stream_on_their_own_connections_and_progress_is_saved(
    make_worker, monkeypatch, settings, streams
):
    """A real export (a task's or the command's) opens no transaction around the files: its COPYs
    run on connections of their own (several at once, each on a chunk of pair ids, all reading one
    exported snapshot), and the snapshot's stored progress moves while they stream."""
    from django.db import connection

    from modeling.models import Snapshot
    from modeling.snapshots import streams as export_streams

    with connection.cursor() as cursor:
        # Pair ids that start high, as in a table whose early rows were deleted (or a test database
        # late in the suite): the chunks must start at the lowest id, not at 0.
        cursor.execute("SELECT setval(pg_get_serial_sequence('collection_pair', 'id'), 30000)")
    committed_corpus(make_worker)
    assert ValidationLabel.objects.filter(position=6).exists()
    monkeypatch.setattr(export_streams, "CHUNK_PAIRS", 3)
    settings.EXPORT_STREAMS = streams
    opened = []
    raw_connection = export_streams._raw_connection

    def counted(params):
        opened.append(1)
        return raw_connection(params)

    monkeypatch.setattr(export_streams, "_raw_connection", counted)
    assert not connection.in_atomic_block
    snapshot = create_snapshot(None)
    seen = []

    def progress(done, total):
        seen.append((done, total, Snapshot.objects.get(pk=snapshot.pk).progress))

    database = export_snapshot(snapshot, progress=progress, page_size=5)
    assert len(seen) >= 3 and seen[-1][0] == seen[-1][1] == 13
    assert len(opened) <= 13 // 3 + 3  # a coordinator and a connection per chunk of three pairs
    for done, total, stored in seen[:-1]:
        assert stored == pytest.approx(min(done / total, 0.99))  # 1.0 only once the files are in place
    monkeypatch.setattr(services, "DATABASE_LINES", False)
    python = export_snapshot(create_snapshot(None))
    assert files_of(database) == files_of(python)
