"""Checkpoints and served snapshot files go through Django's storage API: another store, same code.

S3 cannot be reached here; these tests configure the storage aliases that OBJECT_STORAGE_BUCKET
sets ("checkpoints", "snapshots") with a FileSystemStorage elsewhere, which is what proves that
nothing reads or writes around the storage.
"""

import hashlib
import io
import shutil
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from modeling.models import NodeToken
from modeling.training.run_writes import lease_run, store_checkpoint
from modeling.training.services import launch_training_run
from tests.present import present

from .helpers import learnable_splits, run_checkpoint_bytes, served_snapshot


@pytest.fixture
def object_store(settings, tmp_path):
    store = tmp_path / "object-store"
    settings.STORAGES = {
        **settings.STORAGES,
        "checkpoints": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(store / "checkpoints")},
        },
        "snapshots": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(store / "snapshots")},
        },
    }
    return store


def test_snapshot_files_are_served_from_the_snapshot_storage_when_not_on_this_disk(db, researcher, object_store):
    snapshot = served_snapshot(learnable_splits(seed=9, n_train=30, n_eval=5), researcher)
    # The files live only in the store now, under snapshots/<id>/<name>.
    shutil.move(snapshot.directory, object_store / "snapshots" / str(snapshot.pk))
    token, key = NodeToken.issue("node")
    node = APIClient()
    node.credentials(HTTP_AUTHORIZATION=f"Worker {key}")
    # A node reads the snapshot of a run it holds a live lease on.
    run = launch_training_run(snapshot, "majority", config={}, enqueue=False)
    assert lease_run(run.pk, "node@host", run.celery_task_id, node_token=token) is not None
    url = f"/api/snapshots/{snapshot.pk}/files/train.jsonl"
    # djangorestframework-stubs type APIClient's responses as DRF Responses; a file comes as Django's FileResponse.
    whole = b"".join(node.get(url).streaming_content)  # type: ignore[attr-defined]
    assert whole == (object_store / "snapshots" / str(snapshot.pk) / "train.jsonl").read_bytes()
    assert b"".join(node.get(url, HTTP_RANGE="bytes=10-").streaming_content) == whole[10:]  # type: ignore[attr-defined]
    assert node.get(f"/api/snapshots/{snapshot.pk}/files/dev_matched.tsv").status_code == 200
    assert node.get(f"/api/snapshots/{snapshot.pk}/files/nothing.jsonl").status_code == 404


def test_checkpoints_are_written_to_and_read_from_the_checkpoint_storage(
    db, researcher, object_store, settings, client, tmp_path
):
    snapshot = served_snapshot(learnable_splits(seed=10, n_train=20, n_eval=5), researcher)
    run = launch_training_run(snapshot, "majority", config={}, enqueue=False)
    run = present(lease_run(run.pk, "host", run.celery_task_id))
    body = run_checkpoint_bytes(tmp_path, run)
    assert store_checkpoint(run.pk, run.celery_task_id, run.lease_id, io.BytesIO(body))
    run.refresh_from_db()
    stored = object_store / "checkpoints" / run.checkpoint_name
    assert stored.read_bytes() == body and run.checkpoint_path == str(stored)
    assert not Path(settings.CHECKPOINT_DIR).exists() or not any(Path(settings.CHECKPOINT_DIR).iterdir())
    client.force_login(researcher)
    download = client.get(f"/api/training-runs/{run.pk}/checkpoint/")
    assert hashlib.sha256(b"".join(download.streaming_content)).hexdigest() == run.checkpoint_sha256


def test_object_storage_settings_select_the_s3_backend(monkeypatch):
    """OBJECT_STORAGE_BUCKET switches both aliases to django-storages' S3 backend (not contacted here)."""
    import importlib

    import annotation_site.settings as site_settings

    monkeypatch.setenv("OBJECT_STORAGE_BUCKET", "nli-lab")
    monkeypatch.setenv("OBJECT_STORAGE_ENDPOINT_URL", "https://minio.example.org:9000")
    try:
        reloaded = importlib.reload(site_settings)
        for alias, prefix in (("checkpoints", "checkpoints"), ("snapshots", "snapshots")):
            config = reloaded.STORAGES[alias]
            assert config["BACKEND"] == "storages.backends.s3.S3Storage"
            assert config["OPTIONS"]["bucket_name"] == "nli-lab" and config["OPTIONS"]["location"] == prefix
            assert config["OPTIONS"]["endpoint_url"] == "https://minio.example.org:9000"
        from storages.backends.s3 import S3Storage

        storage = S3Storage(**reloaded.STORAGES["checkpoints"]["OPTIONS"])  # builds without a network call
        assert storage.bucket_name == "nli-lab"
    finally:
        monkeypatch.delenv("OBJECT_STORAGE_BUCKET")
        importlib.reload(site_settings)


def test_publish_snapshot_copies_the_files_into_the_store_once(db, researcher, object_store):
    from io import StringIO

    from django.core.management import call_command

    snapshot = served_snapshot(learnable_splits(seed=11, n_train=20, n_eval=5), researcher)
    out = StringIO()
    call_command("publish_snapshot", str(snapshot.pk), stdout=out)
    names = sorted(p.name for p in Path(snapshot.directory).iterdir())
    assert sorted(p.name for p in (object_store / "snapshots" / str(snapshot.pk)).iterdir()) == names
    assert f"{len(names)} file(s) copied" in out.getvalue()
    call_command("publish_snapshot", str(snapshot.pk), stdout=out)
    assert "0 file(s) copied" in out.getvalue()
