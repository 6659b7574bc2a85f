"""Training on a GPU node that shares nothing with the platform but the network.

With a broker (the PostgreSQL pass) the node is a real Celery worker subprocess with no database
settings, its own empty DATA_DIR and a node token; the platform is pytest-django's live server.
Without one, the same HTTP transport runs in-process against the live server.
"""

import hashlib
import json
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token

from modeling.models import RunStatus
from modeling.training.checkpoint import load_checkpoint
from modeling.training.services import launch_training_run

from .helpers import SMALL, follow, learnable_splits, manifest_of, served_snapshot


def researcher_download(live_server, researcher, path):
    token = Token.objects.get_or_create(user=researcher)[0].key
    request = urllib.request.Request(f"{live_server.url}{path}", headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read(), dict(response.headers)


@pytest.mark.celery_worker
def test_a_gpu_node_downloads_verifies_trains_and_sends_its_checkpoint_home(
    gpu_node, gpu_node_worker, live_server, researcher, tmp_path
):
    splits = learnable_splits(seed=100)
    snapshot = served_snapshot(splits, researcher)
    run = follow(launch_training_run(snapshot, "cbow", config=SMALL, user=researcher).pk)
    assert run.status == RunStatus.DONE, run.error
    assert run.node_token.name == "test-gpu-node"
    assert run.results["accuracy"]["test_matched"] > 0.9 and len(run.history) == 3

    # The snapshot came over HTTP into the node's own cache: the JSONL files and the manifest only.
    source = run.results["snapshot_source"]
    assert source["source"] == "download"
    cached = gpu_node / "snapshot-cache" / snapshot.content_hash
    names = sorted(p.name for p in cached.iterdir() if not p.name.startswith("."))
    assert names == sorted(["manifest.json", *(f"{split}.jsonl" for split in splits)])
    assert source["bytes_downloaded"] == sum((Path(snapshot.directory) / n).stat().st_size for n in names)
    assert not Path(settings.DATA_DIR).resolve().is_relative_to(gpu_node.resolve())
    assert not gpu_node.resolve().is_relative_to(Path(settings.DATA_DIR).resolve())

    # The checkpoint is on the platform, recorded with its size and hash, and a researcher gets it back.
    assert run.checkpoint_bytes > 0 and Path(run.checkpoint_path).is_relative_to(settings.CHECKPOINT_DIR)
    body, headers = researcher_download(live_server, researcher, f"/api/training-runs/{run.pk}/checkpoint/")
    assert hashlib.sha256(body).hexdigest() == run.checkpoint_sha256 == headers["X-Content-SHA256"]
    assert len(body) == run.checkpoint_bytes
    downloaded = tmp_path / "model.safetensors"
    downloaded.write_bytes(body)
    model = load_checkpoint(downloaded)  # the snippet of docs/gpu-nodes.md
    test_rows = splits["test_matched"]
    predicted = model.predict_many([(row["sentence1"], row["sentence2"]) for row in test_rows])
    accuracy = sum(p == row["gold_label"] for p, row in zip(predicted, test_rows, strict=False)) / len(test_rows)
    assert abs(accuracy - run.results["accuracy"]["test_matched"]) <= 0.02

    # A second run on the same snapshot finds it in the node's cache.
    second = follow(launch_training_run(snapshot, "hypothesis_only", config=SMALL, user=researcher).pk)
    assert second.status == RunStatus.DONE, second.error
    assert second.results["snapshot_source"]["source"] == "cache"
    assert second.results["snapshot_source"]["bytes_downloaded"] == 0
    assert second.checkpoint_sha256 and second.checkpoint_sha256 != run.checkpoint_sha256
    if gpu_node_worker is not None:
        assert run.node_hostname.startswith("gpu-node-")
        log = Path(gpu_node_worker.log_path).read_text()
        assert run.celery_task_id in log and "ImproperlyConfigured" not in log


@pytest.mark.celery_worker
def test_a_file_tampered_on_the_platform_fails_the_run_naming_it(gpu_node, live_server, researcher):
    snapshot = served_snapshot(learnable_splits(seed=200, n_train=60, n_eval=10), researcher)
    dev = Path(snapshot.directory) / "dev_mismatched.jsonl"
    dev.write_text(dev.read_text().replace("never", "always", 1))
    run = follow(launch_training_run(snapshot, "cbow", config=SMALL, user=researcher).pk)
    assert run.status == RunStatus.FAILED
    assert "hash mismatch: dev_mismatched.jsonl does not match its sha256" in run.error
    assert not run.checkpoint_name
    assert not (gpu_node / "snapshot-cache" / snapshot.content_hash).exists()


@pytest.mark.celery_worker
def test_a_manifest_that_no_longer_gives_the_runs_hash_fails_the_run(gpu_node, live_server, researcher):
    snapshot = served_snapshot(learnable_splits(seed=300, n_train=60, n_eval=10), researcher)
    manifest = manifest_of(snapshot)
    manifest["files"][0]["sha256"] = "0" * 64
    (Path(snapshot.directory) / "manifest.json").write_text(json.dumps(manifest))
    run = follow(launch_training_run(snapshot, "cbow", config=SMALL, user=researcher).pk)
    assert run.status == RunStatus.FAILED
    assert "manifest.json downloaded from the platform does not give the content hash" in run.error


def http_reporter(live_server, key, cache_dir):
    from modeling.training.remote import HttpReporter, PlatformClient
    from modeling.training.snapshot_cache import SnapshotCache

    return HttpReporter(PlatformClient(live_server.url, key, retries=0), SnapshotCache(cache_dir, 10**9))


def test_a_node_with_a_bad_token_leaves_the_run_queued_for_another(live_server, node_token, researcher, tmp_path):
    from modeling.training.remote import PlatformError
    from modeling.training.services import execute_training_run

    snapshot = served_snapshot(learnable_splits(seed=400, n_train=20, n_eval=5), researcher)
    run = launch_training_run(snapshot, "cbow", config=SMALL, user=researcher, enqueue=False)
    with pytest.raises(PlatformError, match=r"401 .*Invalid or revoked node token"):
        execute_training_run(
            run.pk,
            task_id=run.celery_task_id,
            reporter=http_reporter(live_server, "nliw_not-a-token", tmp_path / "cache"),
        )
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED and not run.lease_id


def test_a_reaped_run_stops_the_node_at_its_next_heartbeat(live_server, node_token, researcher, tmp_path):
    from datetime import timedelta

    from django.utils import timezone

    from modeling.models import TrainingRun
    from modeling.training.runner import Heartbeat, RunAbandoned
    from modeling.training.services import reap_stale_runs

    from .conftest import NODE_KEY

    snapshot = served_snapshot(learnable_splits(seed=500, n_train=20, n_eval=5), researcher)
    run = launch_training_run(snapshot, "cbow", config=SMALL, user=researcher, enqueue=False)
    reporter = http_reporter(live_server, NODE_KEY, tmp_path / "cache")
    spec = reporter.lease(run.pk, "gpu-a@node", run.celery_task_id)
    beat = Heartbeat(reporter, spec, interval=0)
    event = {
        "kind": "epoch",
        "epoch": 1,
        "total_epochs": 3,
        "step": 5,
        "total_steps": 15,
        "loss": 0.9,
        "dev_accuracy": 0.5,
        "history": [{"epoch": 1}],
        "device": "cpu",
    }
    beat(event)
    assert TrainingRun.objects.get(pk=run.pk).step == 5
    TrainingRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert reap_stale_runs(minutes=10) == [run.pk]
    with pytest.raises(RunAbandoned):
        beat(dict(event, step=6))
    assert TrainingRun.objects.get(pk=run.pk).status == RunStatus.FAILED
