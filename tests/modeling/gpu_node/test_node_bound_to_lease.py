"""A run is bound to the node token that leased it: to any other token, whatever attempt
or lease id it knows, a running or ended run answers exactly as a run that does not exist."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from modeling.models import RunStatus, TrainingRun
from modeling.training.remote import HttpReporter, PlatformClient
from modeling.training.runner import RunSpec
from modeling.training.services import reap_stale_runs
from modeling.training.snapshot_cache import SnapshotCache
from tests.present import present

from .helpers import run_checkpoint_bytes, worker_client
from .test_node_api import lease, progress, upload

NO_SUCH_RUN = 987_654


def calls_about(client, run, attempt, lease_id, body):
    """Every node call about a run, made with the given ids: {name: response}."""
    held = {"attempt": attempt, "claim": lease_id}
    return {
        "status": client.get(f"/api/worker/runs/{run}/"),
        "lease": client.post(f"/api/worker/runs/{run}/claim/", {"attempt": attempt, "hostname": "x@b"}, format="json"),
        "progress": progress(client, _Run(run, attempt), lease_id),
        "checkpoint": upload(client, _Run(run, attempt), lease_id, body),
        "finish": client.post(
            f"/api/worker/runs/{run}/finish/",
            {**held, "results": {"accuracy": {"dev_matched": 0.99}, "dev_split": "dev_matched"}},
            format="json",
        ),
        "fail": client.post(f"/api/worker/runs/{run}/fail/", {**held, "error": "taken"}, format="json"),
    }


class _Run:
    """What test_node_api's helpers read of a run: its id and attempt."""

    def __init__(self, pk, attempt):
        self.pk, self.celery_task_id = pk, attempt


def test_another_token_knowing_the_attempt_and_lease_hears_of_no_such_run_and_changes_nothing(
    node, queued_run, tmp_path
):
    held = lease(node, queued_run).json()
    body = run_checkpoint_bytes(tmp_path, queued_run)
    attacker = worker_client("node-b")

    answers = calls_about(attacker, queued_run.pk, queued_run.celery_task_id, held["claim"], body)
    nothing = calls_about(attacker, NO_SUCH_RUN, queued_run.celery_task_id, held["claim"], body)

    for call, answer in answers.items():
        assert answer.status_code == 404, (call, answer.content)
        assert answer.json() == {"detail": f"No training run {queued_run.pk}."}, call
        assert nothing[call].json() == {"detail": f"No training run {NO_SUCH_RUN}."}, call
    run = TrainingRun.objects.get(pk=queued_run.pk)
    assert run.status == RunStatus.RUNNING and present(run.node_token).name == "node-a"
    assert run.lease_id == held["claim"] and run.results.get("restarts", 0) == 0 and not run.checkpoint_name
    # The leaseholder goes on to the end.
    assert progress(node, run, held["claim"], step=5).status_code == 200
    assert upload(node, run, held["claim"], body).status_code == 201


def test_an_ended_run_is_unknown_to_other_tokens_too(node, queued_run):
    held = lease(node, queued_run).json()
    assert (
        node.post(
            f"/api/worker/runs/{queued_run.pk}/fail/",
            {"attempt": queued_run.celery_task_id, "claim": held["claim"], "error": "out of memory"},
            format="json",
        ).status_code
        == 200
    )
    assert node.get(f"/api/worker/runs/{queued_run.pk}/").json()["status"] == RunStatus.FAILED
    assert worker_client("node-b").get(f"/api/worker/runs/{queued_run.pk}/").status_code == 404


def test_a_run_the_reaper_requeued_goes_to_the_next_node_and_the_lost_one_hears_404(node, queued_run, settings):
    lost = lease(node, queued_run).json()
    TrainingRun.objects.filter(pk=queued_run.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert reap_stale_runs(minutes=10, requeue=True) == [queued_run.pk]
    requeued = TrainingRun.objects.get(pk=queued_run.pk)
    other = worker_client("node-b")

    taken = lease(other, requeued)

    assert taken.status_code == 200 and taken.json()["restarts"] == 1
    # The lost node comes back: the run is another node's now, so it does not exist for it.
    assert progress(node, queued_run, lost["claim"]).status_code == 404
    assert progress(other, requeued, taken.json()["claim"]).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_a_remote_node_told_its_run_is_unknown_stops_training(live_server, snapshot, tmp_path):
    """Over real HTTP: a 404 about its run is a lost lease to the node (it stops), never a heartbeat to retry."""
    from modeling.models import NodeToken
    from modeling.training.services import launch_training_run

    from .helpers import SMALL

    run = launch_training_run(snapshot, "cbow", config=SMALL, enqueue=False)
    _, key = NodeToken.issue("node-a")
    reporter = HttpReporter(PlatformClient(live_server.url, key, retries=0), SnapshotCache(tmp_path / "cache", 10**9))
    spec = present(reporter.lease(run.pk, "gpu@node-a", run.celery_task_id))
    # Requeued under a new attempt, as reap_stale_runs(requeue=True) leaves it (its broker message is
    # not sent here: a worker of the suite would lease the run before node-b).
    TrainingRun.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, celery_task_id=str(uuid.uuid4()))
    requeued = TrainingRun.objects.get(pk=run.pk)
    assert lease(worker_client("node-b"), requeued).status_code == 200

    assert reporter.progress(spec, _progress_fields()) is False
    assert (
        reporter.save_checkpoint(spec, _write(tmp_path / "c.safetensors", run_checkpoint_bytes(tmp_path, run))) is False
    )
    assert reporter.status(run.pk) is None
    assert isinstance(spec, RunSpec)


def _progress_fields():
    return {
        "epoch": 0,
        "total_epochs": 1,
        "step": 1,
        "total_steps": 2,
        "loss": 1.0,
        "dev_accuracy": None,
        "history": [],
        "device": "cpu",
    }


def _write(path, body):
    path.write_bytes(body)
    return path
