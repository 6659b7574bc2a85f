"""A packed genre matrix on a GPU node that shares nothing with the platform but the network: ONE
message reaches the node, which leases every run of it over the node API under the message's
attempt, trains them at once and sends each run's checkpoint and results home."""

from pathlib import Path

import pytest

from modeling.models import RunStatus
from modeling.training import services
from tests.conftest import needs_broker

from .conftest import REMOTE_QUEUE
from .helpers import SMALL, follow, learnable_splits, served_snapshot

GENRES = ("fiction", "travel", "slate")


@pytest.mark.celery_worker
def test_a_packed_matrix_reaches_a_gpu_node_as_one_task_and_each_run_comes_home(
    gpu_node, gpu_node_worker, live_server, researcher, monkeypatch
):
    if gpu_node_worker is None:
        needs_broker()
    from annotation_site.celery import app

    def send_pack_to_gpu_node(run_ids, task_id):
        app.loader.import_default_modules()  # as base.task_queue.enqueue does in a web process
        app.tasks[services.PACKED_TRAINING_TASK].apply_async(args=(run_ids,), task_id=task_id, queue=REMOTE_QUEUE)

    monkeypatch.setattr(services, "_enqueue_pack", send_pack_to_gpu_node)
    snapshot = served_snapshot(learnable_splits(seed=300, n_train=150, n_eval=20), researcher)
    log_start = len(Path(gpu_node_worker.log_path).read_text())

    runs = services.launch_packed_training_runs(
        snapshot, "cbow", [dict(SMALL, epochs=1, train_genre=genre) for genre in GENRES], user=researcher
    )

    done = [follow(run.pk) for run in runs]
    for run in done:
        assert run.status == RunStatus.DONE, run.error
        assert run.node_token.name == "test-gpu-node" and run.node_hostname.startswith("gpu-node-")
        assert len(run.history) == 1 and run.step == run.total_steps > 0  # its own heartbeats, over HTTP
        assert run.checkpoint_sha256 and Path(run.checkpoint_path).is_file()  # uploaded, checked, stored
        assert run.results["snapshot_source"]["source"] in ("download", "cache")  # as a lone run reports it
    assert len({run.checkpoint_sha256 for run in done}) == 3
    (attempt,) = {run.celery_task_id for run in done}
    log = Path(gpu_node_worker.log_path).read_text()[log_start:]
    received = [line for line in log.splitlines() if line.endswith("] received")]
    assert len(received) == 1 and f"Task modeling.tasks.run_packed_training[{attempt}]" in received[0]
    assert "ImproperlyConfigured" not in log
