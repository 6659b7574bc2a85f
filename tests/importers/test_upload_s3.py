"""An upload made on one host and imported on another with its own DATA_DIR,
through object storage (a moto_server bucket, the s3_storage fixture): before, the task got the
receiving host's absolute path and a worker elsewhere ended "succeeded: None" with no import row."""

import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from base.file_storage import is_shared
from collection.models import PremiseImport
from collection.tasks import import_uploaded_premises
from corpus.models import ImportStatus, Premise
from importers.models import CorpusImport
from tests.conftest import start_celery_worker, stop_celery_worker, wait_for
from tests.importers.helpers import ensure_genres

from .test_upload_worker_killed import session_worker_aside  # noqa: F401 - a fixture

TEXT = (
    b"The lighthouse keeper climbed the stairs every evening at dusk.\n\n"
    b"Her sister kept the ledger of every ship that passed the point.\n"
)
ROWS = b"".join(
    b'{"pairID": "%de", "promptID": "%d", "sentence1": "A dog number %d runs.", "sentence2": "An animal moves.",'
    b' "gold_label": "entailment", "annotator_labels": ["entailment"], "genre": "captions"}\n' % (n, n, n)
    for n in range(20)
)


@pytest.mark.django_db
def test_an_upload_stored_on_one_host_is_imported_by_a_worker_with_another_data_dir(s3_storage, settings, tmp_path):
    ensure_genres("fiction")
    settings.DATA_DIR = tmp_path / "web-host"
    from collection.premise_uploads import queue_premise_upload

    run = queue_premise_upload(SimpleUploadedFile("keeper.txt", TEXT), "fiction", "tales")
    assert is_shared("uploads") and s3_storage.keys_under("uploads/") == [f"uploads/{run.upload}"]
    settings.DATA_DIR = tmp_path / "worker-host"  # the worker's disk, which never saw the upload
    assert import_uploaded_premises(run.pk) == run.pk
    run.refresh_from_db()
    assert (run.status, run.kept) == (ImportStatus.DONE, 2)
    assert Premise.objects.filter(dataset__slug="tales").count() == 2
    assert s3_storage.keys_under("uploads/") == []  # removed once imported
    assert not (tmp_path / "web-host" / "uploads").exists() and not (tmp_path / "worker-host" / "uploads").exists()


@pytest.mark.celery_worker
@pytest.mark.slow
def test_a_real_worker_on_another_disk_imports_an_upload_made_through_the_page(
    session_worker_aside,  # noqa: F811
    s3_storage,
    settings,
    client,
    researcher,
    tmp_path,
):
    ensure_genres("captions")
    settings.DATA_DIR = tmp_path / "worker-host"
    worker = start_celery_worker(f"s3-worker-{os.getpid()}", "default", tmp_path / "worker.log", extra_env=s3_storage)
    try:
        settings.DATA_DIR = tmp_path / "web-host"
        client.force_login(researcher)
        upload = SimpleUploadedFile("snli_1.0_dev.jsonl", ROWS)
        client.post(reverse("dashboard:imports"), {"kind": "pairs", "file": upload, "dataset": "snli-s3"})
        run = CorpusImport.objects.get()  # there the moment the page answered
        wait_for(
            lambda: CorpusImport.objects.filter(pk=run.pk, status__in=["done", "failed"]).exists(),
            timeout=90,
            message="the worker's import",
        )
        # The task removes the stored file just after it marks the row done: a worker stopped the
        # moment the row says so could be killed between the two (CI saw it once).
        wait_for(lambda: s3_storage.keys_under("uploads/") == [], timeout=30, message="the stored upload's removal")
    finally:
        stop_celery_worker(worker)
    run.refresh_from_db()
    assert (run.status, run.pairs_created) == (ImportStatus.DONE, 20), run.error
    assert s3_storage.keys_under("uploads/") == []
    assert not (tmp_path / "worker-host" / "uploads").exists() and not (tmp_path / "web-host" / "uploads").exists()
    assert not PremiseImport.objects.exists()
