"""The manifest's records (provenance, typing evidence) and the label file are made on connections of
their own while the COPY streams the split files, and are what a read after the export gives;
inside a transaction already open they are read on its connection, which alone sees its rows."""

import hashlib

import pytest
from django.db import connection, transaction

from corpus.models import Pair, ValidationLabel
from modeling.datasheet import PROVENANCE_KEY, snapshot_provenance
from modeling.snapshots import selectors
from modeling.snapshots.files import read_manifest_of
from modeling.snapshots.format import LABELS_FILE
from modeling.snapshots.services import _alongside, create_snapshot, export_snapshot
from tests.modeling.test_export_label_lines import awkward_label_corpus, exported_label_file, reference_label_file
from tests.modeling.test_export_lines import committed_corpus
from tests.test_with_database import eventually


def backend_pid() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def backend_alive(pid: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid])
        return cursor.fetchone()[0] == 1


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_records_are_read_on_another_connection_which_is_closed_after():
    mine = backend_pid()
    with _alongside(backend_pid) as records:
        theirs = records()
    assert theirs != mine
    # The client's close is immediate; the server's backend leaves pg_stat_activity a moment later.
    assert eventually(lambda: not backend_alive(theirs))


@pytest.mark.django_db(transaction=True)
def test_a_read_that_fails_beside_the_files_raises_its_error_where_the_result_is_asked_for():
    def failing() -> int:
        raise LookupError("the records could not be read")

    with pytest.raises(LookupError, match="could not be read"), _alongside(failing) as records:
        records()


@pytest.mark.django_db
def test_inside_a_transaction_the_records_are_read_on_its_connection_and_see_its_rows(make_worker):
    corpus = committed_corpus(make_worker)
    assert connection.in_atomic_block
    with transaction.atomic():
        ValidationLabel.objects.filter(pair__dataset=corpus, position__gt=1).update(seconds=3.5)
        with _alongside(lambda: (backend_pid(), snapshot_provenance([corpus.slug], {}, upper_id=10**9))) as read:
            pid, provenance = read()
    assert pid == backend_pid()
    assert provenance["median_seconds_per_label"] == 3.5


@pytest.mark.django_db(transaction=True)
def test_an_export_outside_a_transaction_writes_the_records_a_later_read_gives(make_worker):
    corpus = committed_corpus(make_worker)
    labels = list(ValidationLabel.objects.filter(pair__dataset=corpus, position__gt=1).order_by("pk"))
    for index, label in enumerate(labels):
        label.seconds = [None, 0.0, 2.5, 11.0, 4.25][index % 5]
    ValidationLabel.objects.bulk_update(labels, ["seconds"])
    assert not connection.in_atomic_block
    snapshot = export_snapshot(create_snapshot(None, datasets=[corpus.slug]), extra_files=())
    manifest = read_manifest_of(snapshot)
    upper_id = Pair.objects.filter(dataset=corpus).order_by("-pk").values_list("pk", flat=True).first()
    assert manifest[PROVENANCE_KEY] == snapshot_provenance([corpus.slug], {}, upper_id=upper_id)
    assert manifest[PROVENANCE_KEY]["validators"] == 5  # the excluded worker's labels are still theirs
    assert manifest[PROVENANCE_KEY]["median_seconds_per_label"] == 4.25
    assert manifest["typing_evidence"] == selectors.typing_evidence_of([corpus.slug], {}, upper_id=upper_id)


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_label_file_written_beside_the_split_files_is_the_one_python_defines(make_worker):
    awkward_label_corpus(make_worker)
    assert not connection.in_atomic_block
    snapshot, written = exported_label_file({"typing_flags": True})
    pairs = selectors.pairs_for_export(snapshot.datasets, snapshot.filters)
    assert written.count(b"\n") == ValidationLabel.objects.filter(pair__in=pairs).count() > 0
    assert written == reference_label_file(snapshot)
    entry = next(entry for entry in read_manifest_of(snapshot)["files"] if entry["name"] == LABELS_FILE)
    assert entry["rows"] == written.count(b"\n") and entry["sha256"] == hashlib.sha256(written).hexdigest()
