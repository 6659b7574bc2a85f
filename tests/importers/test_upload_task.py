"""A dashboard upload through storage (base.uploads): stored in
the "uploads" storage, its import row queued in the transaction that queues its task, read by the
worker from storage (not from the web host's disk), the stored file removed once the import is
done or failed for good."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from base.uploads import upload_storage
from corpus.models import Genre, ImportStatus, Pair
from importers.models import CorpusImport
from importers.services import PAIRS_UPLOAD_TASK, queue_pairs_upload
from importers.tasks import import_uploaded_pairs
from tests.importers.helpers import ensure_genres

ROW = (
    b'{"pairID": "1e", "promptID": "1", "sentence1": "A dog runs.", "sentence2": "An animal moves.",'
    b' "gold_label": "entailment", "annotator_labels": ["entailment"], "genre": "captions"}\n'
)


def stored_uploads():
    storage = upload_storage()
    return sorted(storage.listdir("")[0]) if storage.exists("") else []


@pytest.mark.django_db
def test_the_import_row_is_queued_with_the_upload_before_any_worker_runs(django_capture_on_commit_callbacks):
    ensure_genres("captions")
    with django_capture_on_commit_callbacks() as queued:
        run = queue_pairs_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), "up")
    # The row exists and says what it is before the task is even sent (it is sent after the commit).
    assert CorpusImport.objects.get() == run
    assert (run.status, run.source, run.split, run.bytes_total) == (
        ImportStatus.QUEUED,
        "pairs_dev.jsonl",
        "dev",
        len(ROW),
    )
    assert upload_storage().exists(run.upload) and run.upload.endswith("/pairs_dev.jsonl")
    assert len(queued) == 1  # the task, queued with the row's pk once the row is committed


@pytest.mark.django_db
def test_the_task_reads_the_upload_from_storage_and_removes_it():
    ensure_genres("captions")
    run = queue_pairs_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), "up")
    assert import_uploaded_pairs(run.pk) == run.pk
    run.refresh_from_db()
    assert run.status == ImportStatus.DONE and run.pairs_created == Pair.objects.count() == 1
    assert not upload_storage().exists(run.upload) and stored_uploads() == []


@pytest.mark.django_db
def test_a_worker_that_cannot_reach_the_upload_says_so_on_the_row(settings, tmp_path):
    """Before: the task got the web host's absolute path; a worker without that disk ended
    "succeeded: None" with no row. Now the row is there from the start, and a worker that cannot
    reach the storage says so on it (with shared storage it imports: test_upload_s3.py)."""
    ensure_genres("captions")
    run = queue_pairs_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), "up")
    settings.DATA_DIR = tmp_path / "worker-host"  # the worker's own disk, which never saw the upload
    assert import_uploaded_pairs(run.pk) is None
    run.refresh_from_db()
    assert run.status == ImportStatus.FAILED
    assert "no longer in storage" in run.error and "upload it again" in run.error


@pytest.mark.django_db
def test_an_upload_the_import_refuses_is_failed_on_its_row_and_removed():
    ensure_genres("captions", "fiction")
    run = queue_pairs_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), "up", genre="fiction")
    Genre.objects.filter(slug="fiction").delete()  # gone before a worker took the upload
    assert import_uploaded_pairs(run.pk) is None
    run.refresh_from_db()
    assert run.status == ImportStatus.FAILED and "unknown genre 'fiction'" in run.error
    assert not upload_storage().exists(run.upload) and stored_uploads() == []


@pytest.mark.django_db
def test_a_second_delivery_of_the_task_does_not_import_again():
    ensure_genres("captions")
    run = queue_pairs_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), "up")
    assert import_uploaded_pairs(run.pk) == run.pk
    assert import_uploaded_pairs(run.pk) is None  # done: not taken again
    assert CorpusImport.objects.get().pairs_created == Pair.objects.count() == 1


def test_the_task_name_is_the_one_the_services_queue():
    assert import_uploaded_pairs.name == PAIRS_UPLOAD_TASK
