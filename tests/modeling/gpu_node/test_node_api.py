"""The node API and the node token: what a GPU node may do, and everything it may not."""

import hashlib
from datetime import timedelta

from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from modeling.models import NodeToken, RunStatus, TrainingRun
from modeling.training.services import launch_training_run, reap_stale_runs
from tests.modeling.conftest import FIVE_E, add_pair, add_premise, genre
from tests.present import present

from .helpers import run_checkpoint_bytes, worker_client


def lease(client, run, hostname="gpu-a@node"):
    return client.post(
        f"/api/worker/runs/{run.pk}/claim/", {"attempt": run.celery_task_id, "hostname": hostname}, format="json"
    )


def progress(client, run, lease_id, step=1):
    return client.post(
        f"/api/worker/runs/{run.pk}/progress/",
        {
            "attempt": run.celery_task_id,
            "claim": lease_id,
            "epoch": 1,
            "total_epochs": 3,
            "step": step,
            "total_steps": 9,
            "loss": 0.5,
            "dev_accuracy": 0.4,
            "history": [],
            "device": "cpu (1 threads)",
        },
        format="json",
    )


def upload(client, run, lease_id, body, sha=None):
    return client.put(
        f"/api/worker/runs/{run.pk}/checkpoint/",
        data=body,
        content_type="application/octet-stream",
        HTTP_X_ATTEMPT=run.celery_task_id,
        HTTP_X_CLAIM=lease_id,
        HTTP_X_CONTENT_SHA256=sha or hashlib.sha256(body).hexdigest(),
    )


def test_a_worker_token_reads_snapshot_files_and_nothing_else(node, snapshot, researcher):
    premise = add_premise(snapshot_dataset(), genre("fiction"), "train", "A premise.")
    pair = add_pair(premise.dataset, premise, "A hypothesis.", FIVE_E)
    run = launch_training_run(snapshot, "majority", config={}, enqueue=False)
    assert lease(node, run).status_code == 200  # a node reads the snapshot of a run it holds
    assert node.get(f"/api/snapshots/{snapshot.pk}/files/train.jsonl").status_code == 200
    assert node.get(f"/api/snapshots/{snapshot.pk}/files/manifest.json").status_code == 200
    refused = [
        ("get", "/api/pairs/"),
        ("get", f"/api/pairs/{pair.pk}/"),
        ("get", "/api/stats/"),
        ("get", "/api/snapshots/"),
        ("get", f"/api/snapshots/{snapshot.pk}/"),
        ("post", "/api/snapshots/"),
        ("get", "/api/training-runs/"),
        ("get", f"/api/training-runs/{run.pk}/"),
        ("post", "/api/training-runs/"),
        ("get", f"/api/training-runs/{run.pk}/checkpoint/"),
        ("get", "/api/schema/"),
    ]
    for method, url in refused:
        response = getattr(node, method)(url, {}, format="json") if method == "post" else node.get(url)
        assert response.status_code in (401, 403), (url, response.status_code)
    assert TrainingRun.objects.count() == 1


def snapshot_dataset():
    from corpus.models import Dataset

    return Dataset.objects.get_or_create(slug="mini", defaults={"name": "Mini"})[0]


def test_a_researcher_cannot_act_as_a_worker(researcher, researcher_api, client, queued_run):
    key = Token.objects.get(user=researcher).key
    client.force_login(researcher)
    as_worker_scheme = APIClient()
    as_worker_scheme.credentials(HTTP_AUTHORIZATION=f"Worker {key}")  # a researcher's key under the worker scheme
    for caller in (researcher_api, client, as_worker_scheme):
        assert lease(caller, queued_run).status_code in (401, 403)
        assert caller.get(f"/api/worker/runs/{queued_run.pk}/").status_code in (401, 403)
    queued_run.refresh_from_db()
    assert queued_run.status == RunStatus.QUEUED and not queued_run.lease_id


def test_a_revoked_worker_token_is_refused(db, queued_run):
    token, key = NodeToken.issue("old-node")
    token.revoke()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Worker {key}")
    assert lease(client, queued_run).status_code == 401


def test_claim_gives_the_spec_and_only_the_holder_writes_the_run(node, queued_run):
    answer = lease(node, queued_run)
    assert answer.status_code == 200, answer.content
    spec = answer.json()
    assert spec["model"] == "cbow" and spec["snapshot_hash"] == queued_run.snapshot_hash
    assert spec["attempt"] == queued_run.celery_task_id and len(spec["claim"]) == 32
    run = TrainingRun.objects.get(pk=queued_run.pk)
    assert run.status == RunStatus.RUNNING and present(run.node_token).name == "node-a"
    assert progress(node, run, spec["claim"], step=4).status_code == 200
    run.refresh_from_db()
    assert run.step == 4 and run.loss == 0.5 and run.device == "cpu (1 threads)"

    other = worker_client("node-b")
    # Another node, even knowing the attempt and lease ids, cannot write this node's run: to it the run does not exist.
    assert progress(other, run, spec["claim"]).status_code == 404
    assert (
        other.post(
            f"/api/worker/runs/{run.pk}/fail/",
            {"attempt": run.celery_task_id, "claim": spec["claim"], "error": "x"},
            format="json",
        ).status_code
        == 404
    )
    assert progress(node, run, "not-the-claim").status_code == 409
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.step == 4


def test_a_takeover_stops_the_worker_it_replaces(node, queued_run, tmp_path):
    first = lease(node, queued_run).json()
    # The broker redelivers the message (the first Celery worker looked lost) to another worker of
    # the same node, holding the same node token (another token would be told the run does not exist).
    other = node
    second = lease(other, queued_run, hostname="gpu-b@node").json()
    assert second["restarts"] == 1 and second["claim"] != first["claim"]
    run = TrainingRun.objects.get(pk=queued_run.pk)
    stale = progress(node, run, first["claim"])
    assert stale.status_code == 409 and stale.json()["status"] == "running"
    assert progress(other, run, second["claim"]).status_code == 200
    assert upload(other, run, second["claim"], run_checkpoint_bytes(tmp_path, run)).status_code == 201
    finished = other.post(
        f"/api/worker/runs/{run.pk}/finish/",
        {
            "attempt": run.celery_task_id,
            "claim": second["claim"],
            "results": {"accuracy": {"dev_matched": 0.5}, "dev_split": "dev_matched"},
        },
        format="json",
    )
    assert finished.status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.DONE and run.dev_accuracy == 0.5 and run.node_hostname == "gpu-b@node"


def test_a_reaped_run_answers_409_so_its_worker_stops(node, queued_run):
    spec = lease(node, queued_run).json()
    TrainingRun.objects.filter(pk=queued_run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert reap_stale_runs(minutes=10) == [queued_run.pk]
    refused = progress(node, queued_run, spec["claim"])
    assert refused.status_code == 409 and refused.json()["status"] == "failed"
    assert "stop" in refused.json()["detail"]


def test_bad_reports_are_400_and_change_nothing(node, queued_run):
    spec = lease(node, queued_run).json()
    bad = node.post(
        f"/api/worker/runs/{queued_run.pk}/progress/",
        {"attempt": queued_run.celery_task_id, "claim": spec["claim"], "step": -1},
        format="json",
    )
    assert bad.status_code == 400 and "step" in bad.json() and "epoch" in bad.json()
    no_accuracy = node.post(
        f"/api/worker/runs/{queued_run.pk}/finish/",
        {"attempt": queued_run.celery_task_id, "claim": spec["claim"], "results": {"x": 1}},
        format="json",
    )
    assert no_accuracy.status_code == 400 and "accuracy" in no_accuracy.content.decode()
    assert TrainingRun.objects.get(pk=queued_run.pk).status == RunStatus.RUNNING


def test_a_checkpoint_upload_is_checked_recorded_and_downloaded_by_researchers(
    node, queued_run, researcher_api, settings, tmp_path
):
    spec = lease(node, queued_run).json()
    body = run_checkpoint_bytes(tmp_path, queued_run)
    damaged = upload(node, queued_run, spec["claim"], body[:-10] + b"0" * 10, sha=hashlib.sha256(body).hexdigest())
    assert damaged.status_code == 400 and "damaged in transit" in damaged.json()["detail"]
    assert not settings.CHECKPOINT_DIR.exists() or not list(settings.CHECKPOINT_DIR.iterdir())
    assert upload(node, queued_run, "wrong-claim", body).status_code == 409
    stored = upload(node, queued_run, spec["claim"], body)
    assert stored.status_code == 201, stored.content
    run = TrainingRun.objects.get(pk=queued_run.pk)
    assert run.checkpoint_bytes == len(body) and run.checkpoint_sha256 == hashlib.sha256(body).hexdigest()
    assert run.checkpoint_path.startswith(str(settings.CHECKPOINT_DIR))
    assert len(list(settings.CHECKPOINT_DIR.iterdir())) == 1  # nothing kept from the refused uploads
    download = researcher_api.get(f"/api/training-runs/{run.pk}/checkpoint/")
    assert download.status_code == 200
    assert hashlib.sha256(b"".join(download.streaming_content)).hexdigest() == run.checkpoint_sha256
    assert download["X-Content-SHA256"] == run.checkpoint_sha256
    assert (
        researcher_api.get(f"/api/training-runs/{run.pk}/")
        .json()["checkpoint_url"]
        .endswith(f"/api/training-runs/{run.pk}/checkpoint/")
    )


def test_snapshot_files_resume_from_a_byte_offset(node, queued_run, snapshot):
    assert lease(node, queued_run).status_code == 200  # a node reads the snapshot of a run it holds
    url = f"/api/snapshots/{snapshot.pk}/files/train.jsonl"
    whole = b"".join(node.get(url).streaming_content)
    rest = node.get(url, HTTP_RANGE="bytes=100-")
    assert rest.status_code == 206 and rest["Content-Range"] == f"bytes 100-{len(whole) - 1}/{len(whole)}"
    assert b"".join(rest.streaming_content) == whole[100:]
    assert node.get(url, HTTP_RANGE=f"bytes={len(whole)}-").status_code == 416
