"""Snapshots, training launch and checkpoints through the storage layer, against a real S3 server.

Every test here exports or trains as one host, then reads as another: `another_host` points
DATA_DIR (and the folders under it) at a fresh folder and moves the previous host's folder aside,
so no absolute path the first host recorded resolves any more, as on a second machine. What is
shared is what production shares: the database and the bucket on the moto_server process.
"""

import hashlib
import io
import json
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from base.long_tasks import JobStatus
from modeling.models import RunStatus, Snapshot
from modeling.snapshots import files as snapshot_files
from modeling.snapshots.format import MANIFEST_NAME, SnapshotError
from modeling.snapshots.services import create_snapshot, export_snapshot
from modeling.training.services import LaunchRefused, execute_training_run, launch_training_run, validate_launch
from tests.modeling.training_fixtures import make_snapshot, multinli_splits

pytestmark = pytest.mark.django_db


class Hosts:
    """The hosts of one test: each its own DATA_DIR under tmp_path; only one "is here" at a time."""

    def __init__(self, settings, tmp_path):
        self.settings = settings
        self.tmp_path = tmp_path
        self.current = Path(settings.DATA_DIR)

    def become(self, name):
        """Continue as host `name`: a fresh DATA_DIR; the previous host's folder is moved aside."""
        if self.current.exists():
            self.current.rename(self.tmp_path / f"gone-{self.current.parent.name}-{self.current.name}")
        self.current = self.tmp_path / name / "var"
        self.current.mkdir(parents=True)
        self.settings.DATA_DIR = self.current
        self.settings.SNAPSHOT_DIR = self.current / "snapshots"
        self.settings.CHECKPOINT_DIR = self.current / "checkpoints"
        self.settings.SNAPSHOT_CACHE_DIR = self.current / "snapshot-cache"
        return self.current


@pytest.fixture
def hosts(settings, tmp_path):
    hosts = Hosts(settings, tmp_path)
    hosts.become("worker")
    return hosts


def exported_on_worker(**filters):
    snapshot = create_snapshot(None, filters=filters)
    return export_snapshot(snapshot)


def stored_names(s3_storage, snapshot):
    return [key.rsplit("/", 1)[1] for key in s3_storage.keys_under(f"snapshots/{snapshot.pk}/")]


def test_an_export_stores_every_file_in_object_storage_before_it_is_done(s3_storage, small_corpus, hosts):
    snapshot = exported_on_worker()
    assert snapshot.status == JobStatus.DONE
    names = sorted(snapshot.files.values_list("name", flat=True))
    assert stored_names(s3_storage, snapshot) == sorted([*names, MANIFEST_NAME])
    # Nothing of it is left on the exporting host's disk: no host depends on that one.
    assert not (hosts.current / "snapshots" / str(snapshot.pk)).exists()
    assert snapshot.directory == ""


def test_a_done_snapshot_is_downloaded_from_another_host_without_publishing(
    s3_storage, small_corpus, hosts, client, researcher
):
    snapshot = exported_on_worker()
    hosts.become("web-a")
    client.force_login(researcher)
    page = client.get("/dashboard/snapshots/").content.decode()
    links = sorted(set(re.findall(rf'href="(/api/snapshots/{snapshot.pk}/files/[^"]+)"', page)))
    assert len(links) == snapshot.files.count()
    for link in links:
        name = link.rsplit("/", 1)[1]
        answer = client.get(link)
        assert answer.status_code == 200, (link, answer.content[:200])
        body = b"".join(answer.streaming_content)
        assert hashlib.sha256(body).hexdigest() == snapshot.files.get(name=name).sha256
    manifest = client.get(f"/api/snapshots/{snapshot.pk}/files/{MANIFEST_NAME}")
    assert json.loads(b"".join(manifest.streaming_content))["content_hash"] == snapshot.content_hash
    whole = b"".join(client.get(links[0]).streaming_content)
    resumed = client.get(links[0], HTTP_RANGE="bytes=5-")
    assert resumed.status_code == 206 and b"".join(resumed.streaming_content) == whole[5:]


def test_a_file_missing_from_storage_is_answered_404_saying_so(s3_storage, small_corpus, hosts, client, researcher):
    snapshot = exported_on_worker()
    s3_storage.server.client().delete_object(Bucket=s3_storage.bucket, Key=f"snapshots/{snapshot.pk}/dev.jsonl")
    client.force_login(researcher)
    answer = client.get(f"/api/snapshots/{snapshot.pk}/files/dev.jsonl")
    assert answer.status_code == 404 and "missing from storage" in answer.json()["detail"]


class FailingOnManifest:
    """The real S3 backend, but its save of manifest.json fails as a dropped connection would
    (no S3 server refuses one key of a set on demand; every other file really reaches the bucket)."""

    def __new__(cls, **options):
        from storages.backends.s3 import S3Storage

        class Failing(S3Storage):
            def _save(self, name, content):
                if name.endswith(MANIFEST_NAME):
                    raise ConnectionResetError("connection reset by peer while saving manifest.json")
                return super()._save(name, content)

        return Failing(**options)


def test_a_failed_upload_fails_the_snapshot_and_leaves_no_file_stored(s3_storage, small_corpus, hosts, settings):
    snapshot = create_snapshot(None)
    working = dict(settings.STORAGES["snapshots"])
    # dev.jsonl, dev.tsv are saved before manifest.json (names in order): a half set, if kept.
    settings.STORAGES = {**settings.STORAGES, "snapshots": dict(working, BACKEND=f"{__name__}.FailingOnManifest")}
    with pytest.raises(ConnectionResetError):
        export_snapshot(snapshot)
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.FAILED and "connection reset" in snapshot.error
    assert stored_names(s3_storage, snapshot) == [] and not snapshot.files.exists()
    # The retry, with the connection back, stores the whole set once.
    settings.STORAGES = {**settings.STORAGES, "snapshots": working}
    Snapshot.objects.filter(pk=snapshot.pk).update(status=JobStatus.PENDING)
    snapshot = export_snapshot(snapshot)
    assert snapshot.status == JobStatus.DONE
    assert stored_names(s3_storage, snapshot) == sorted([*snapshot.files.values_list("name", flat=True), MANIFEST_NAME])


def test_a_retry_removes_what_an_earlier_try_left_in_storage(s3_storage, small_corpus, hosts):
    snapshot = create_snapshot(None)
    bucket = s3_storage.server.client()
    # An export killed mid-upload left a stale file of its own and a different train.jsonl.
    for name in ("train.jsonl", "stale-from-a-killed-try.jsonl"):
        bucket.put_object(Bucket=s3_storage.bucket, Key=f"snapshots/{snapshot.pk}/{name}", Body=b"left behind\n")
    snapshot = export_snapshot(snapshot)
    assert stored_names(s3_storage, snapshot) == sorted([*snapshot.files.values_list("name", flat=True), MANIFEST_NAME])
    train = bucket.get_object(Bucket=s3_storage.bucket, Key=f"snapshots/{snapshot.pk}/train.jsonl")["Body"].read()
    assert hashlib.sha256(train).hexdigest() == snapshot.files.get(name="train.jsonl").sha256


def test_materialised_snapshot_fetches_and_checks_every_file_on_another_host(s3_storage, small_corpus, hosts):
    snapshot = exported_on_worker(label_rows=True)
    hosts.become("release-host")
    assert snapshot_files.local_snapshot_folder(snapshot) is None
    assert snapshot_files.snapshot_file_names(snapshot)[0] == MANIFEST_NAME
    with snapshot_files.materialised_snapshot(snapshot) as folder:
        assert sorted(p.name for p in folder.iterdir()) == sorted(snapshot_files.snapshot_file_names(snapshot))
        kept = folder
    assert not kept.exists()
    s3_storage.server.client().put_object(
        Bucket=s3_storage.bucket, Key=f"snapshots/{snapshot.pk}/labels.jsonl", Body=b"edited after export\n"
    )
    with (
        pytest.raises(SnapshotError, match=r"hash mismatch: labels\.jsonl"),
        snapshot_files.materialised_snapshot(snapshot),
    ):
        pass


def test_export_snapshot_command_copies_the_stored_files_out(s3_storage, small_corpus, hosts, tmp_path):
    out = tmp_path / "out"
    call_command("export_snapshot", "--dataset", "captions-only", "--out", str(out))
    snapshot = Snapshot.objects.get()
    assert snapshot.directory == ""
    assert sorted(p.name for p in out.iterdir()) == sorted(snapshot_files.snapshot_file_names(snapshot))


# --- training launch asks the storage ----------------------------------------------------------


def test_training_launch_accepts_a_stored_snapshot_from_another_host(s3_storage, small_corpus, hosts):
    snapshot = exported_on_worker()
    hosts.become("web-b")
    found, _ = validate_launch(snapshot.pk, "majority")
    assert found == snapshot
    found, config = validate_launch(snapshot.pk, "cbow", config={"train_genre": "fiction"})
    assert config["train_genre"] == "fiction"
    with pytest.raises(LaunchRefused) as refused:
        validate_launch(snapshot.pk, "cbow", config={"train_genre": "letters"})
    assert "has no training pairs" in str(refused.value.message_dict)


def test_launch_refusal_says_the_files_are_missing_from_storage_not_no_train_split(s3_storage, small_corpus, hosts):
    snapshot = exported_on_worker()
    for key in s3_storage.keys_under(f"snapshots/{snapshot.pk}/"):
        s3_storage.server.client().delete_object(Bucket=s3_storage.bucket, Key=key)
    with pytest.raises(LaunchRefused) as refused:
        validate_launch(snapshot.pk, "majority")
    reason = refused.value.message_dict["snapshot"][0]
    assert "missing from storage" in reason and "no train split" not in reason


def test_launch_refusal_of_a_snapshot_exported_elsewhere_before_storage_says_what_to_run(s3_storage, hosts, tmp_path):
    snapshot = make_snapshot(hosts.current / "snapshots" / "old", multinli_splits(n_train=12, n_eval=4))
    hosts.become("web-a")  # the old export's folder is on the worker only
    with pytest.raises(LaunchRefused) as refused:
        validate_launch(snapshot.pk, "majority")
    reason = refused.value.message_dict["snapshot"][0]
    assert "missing from storage" in reason and f"publish_snapshot {snapshot.pk}" in reason


def test_launch_refuses_a_stored_snapshot_without_a_train_split_for_that_reason(s3_storage, small_corpus, hosts):
    snapshot = exported_on_worker(splits=["dev", "test"])
    hosts.become("web-a")
    with pytest.raises(LaunchRefused) as refused:
        validate_launch(snapshot.pk, "majority")
    assert "no train split" in refused.value.message_dict["snapshot"][0]


def test_a_worker_trains_on_a_stored_snapshot_and_another_host_reads_its_checkpoint(
    s3_storage, small_corpus, hosts, client, researcher
):
    snapshot = exported_on_worker()
    hosts.become("web-a")
    run = launch_training_run(snapshot, "majority", config={}, enqueue=False)
    gpu = hosts.become("gpu-worker")
    assert execute_training_run(run.pk)["status"] == "done"
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.results["snapshot_source"]["source"] == "download"
    # The worker's cache holds the verified copy, keyed by content hash; its disk holds no checkpoint.
    assert (gpu / "snapshot-cache" / snapshot.content_hash / "train.jsonl").is_file()
    assert s3_storage.keys_under("checkpoints/") == [f"checkpoints/{run.checkpoint_name}"]
    hosts.become("web-b")
    client.force_login(researcher)
    download = client.get(f"/api/training-runs/{run.pk}/checkpoint/")
    assert download.status_code == 200
    assert hashlib.sha256(b"".join(download.streaming_content)).hexdigest() == run.checkpoint_sha256


# --- publish_snapshot: snapshots exported before the storage kept them --------------------------


def test_publish_snapshot_copies_an_old_export_into_the_storage_for_every_host(s3_storage, hosts, client, researcher):
    folder = hosts.current / "snapshots" / "7"
    snapshot = make_snapshot(folder, multinli_splits(n_train=12, n_eval=4))
    out = io.StringIO()
    call_command("publish_snapshot", str(snapshot.pk), stdout=out)
    assert "6 file(s) copied" in out.getvalue()
    hosts.become("web-a")
    client.force_login(researcher)
    # Made by hand like an old export's folder, it has no file rows: its manifest lists its files.
    assert client.get(f"/api/snapshots/{snapshot.pk}/files/{MANIFEST_NAME}").status_code == 200
    assert validate_launch(snapshot.pk, "majority")[0] == snapshot
    call_command("publish_snapshot", str(snapshot.pk), stdout=out)  # the files are there: nothing to do
    assert "0 file(s) copied" in out.getvalue()


def test_publish_snapshot_on_a_host_without_the_old_folder_says_where_to_run_it(s3_storage, hosts):
    snapshot = make_snapshot(hosts.current / "snapshots" / "7", multinli_splits(n_train=12, n_eval=4))
    hosts.become("web-a")
    with pytest.raises(CommandError, match="run this on the host that exported it"):
        call_command("publish_snapshot", str(snapshot.pk))
