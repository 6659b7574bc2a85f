"""Training runs on a real Celery worker (PostgreSQL + Redis), or in-process in embedded mode.

With a broker, `celery_worker_process` is a worker subprocess consuming the `gpu` queue; the
run's progress, results and failures reach the database from that process. Without one, the
same tests run the task eagerly when the launch transaction commits.
"""

import os
import signal
from pathlib import Path

import pytest

from modeling.models import RunStatus, TrainingRun
from modeling.training.services import launch_training_run
from modeling.training.synthetic import synthetic_rows
from tests.conftest import needs_broker, wait_for

from .training_fixtures import follow, learnable_rows, make_snapshot

SMALL = {"embedding_dim": 16, "hidden_dim": 16, "batch_size": 32, "lr": 0.01, "cpu_threads": 1}


@pytest.mark.celery_worker
def test_a_worker_trains_a_run_and_reports_progress_and_results(
    transactional_db, tmp_path, researcher, celery_worker_process
):
    splits = {
        "train": learnable_rows(1500, 1),
        "dev_matched": learnable_rows(200, 2),
        "dev_mismatched": learnable_rows(100, 3),
        "test_matched": learnable_rows(200, 4),
        "test_mismatched": learnable_rows(100, 5),
    }
    snapshot = make_snapshot(tmp_path / "snap", splits, researcher)
    run = launch_training_run(snapshot, "bilstm", config=dict(SMALL, epochs=4, patience=4), user=researcher)
    run, seen = follow(run.pk)
    assert run.status == RunStatus.DONE, run.error
    assert run.device.startswith("cpu") and run.started_at <= run.finished_at
    assert run.epoch == 4 and len(run.history) == 4 and run.step == run.total_steps
    assert run.results["accuracy"]["test_matched"] > 0.9  # the cue words are learnable
    assert run.results["matched"]["test"] == run.results["accuracy"]["test_matched"]
    assert Path(run.checkpoint_path).exists()
    if celery_worker_process is not None:
        # Another process trained it: its hostname is the worker's, and the row moved while it ran.
        assert run.node_hostname.startswith("test-")
        assert any(status == RunStatus.RUNNING and epoch >= 1 for status, epoch, _, _ in seen), seen[:20]
        assert run.celery_task_id in Path(celery_worker_process.log_path).read_text()


@pytest.mark.celery_worker
def test_a_corrupt_snapshot_fails_on_the_worker_with_the_reason(transactional_db, tmp_path, celery_worker_process):
    folder = tmp_path / "snap"
    snapshot = make_snapshot(folder, {"train": learnable_rows(20, 1), "dev": learnable_rows(5, 2)})
    (folder / "dev.jsonl").write_text((folder / "dev.jsonl").read_text() + "{not json\n")
    run = launch_training_run(snapshot, "cbow", config=dict(SMALL, epochs=1))
    run, _ = follow(run.pk, timeout=60)
    assert run.status == RunStatus.FAILED
    assert "hash mismatch: dev.jsonl does not match its sha256" in run.error


def worker_children(process):
    path = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    return [int(pid) for pid in path.read_text().split()] if path.exists() else []


@pytest.mark.celery_worker
def test_a_killed_worker_child_never_leaves_the_run_running(transactional_db, tmp_path, celery_worker_process):
    if celery_worker_process is None:
        needs_broker()
    rows = synthetic_rows(3000, seed=4)
    snapshot = make_snapshot(tmp_path / "snap", {"train": rows, "dev": synthetic_rows(300, seed=5)})
    run = launch_training_run(snapshot, "bilstm", config=dict(SMALL, epochs=3, patience=3))
    wait_for(
        lambda: TrainingRun.objects.filter(pk=run.pk, status=RunStatus.RUNNING, step__gt=0).exists(),
        timeout=90,
        message="the run to start on the worker",
    )
    children = worker_children(celery_worker_process)
    assert children, "the prefork worker has no child process"
    for pid in children:
        os.kill(pid, signal.SIGKILL)
    # acks_late + reject_on_worker_lost: the broker redelivers; the next child takes the run over.
    # (Were nothing to redeliver it, reap_stale_runs would fail it: see test_training.py.)
    run, _ = follow(run.pk, timeout=240)
    assert run.status == RunStatus.DONE, run.error
    assert run.results["restarts"] == 1  # one attempt lost, the redelivered one finished
    assert celery_worker_process.log_path.read_text().count(f"run_training[{run.celery_task_id}] received") >= 2


@pytest.mark.celery_worker
def test_train_command_queues_the_run_and_waits_for_it(transactional_db, tmp_path, celery_worker_process, capsys):
    from django.core.management import call_command

    snapshot = make_snapshot(
        tmp_path / "snap", {"train": learnable_rows(60, 1), "dev": learnable_rows(20, 2), "test": learnable_rows(20, 3)}
    )
    call_command(
        "train",
        "--snapshot",
        str(snapshot.pk),
        "--model",
        "cbow",
        "--wait",
        "--config",
        '{"embedding_dim": 8, "hidden_dim": 8, "epochs": 2, "cpu_threads": 1}',
    )
    run = TrainingRun.objects.get()
    assert run.status == RunStatus.DONE, run.error
    out = capsys.readouterr().out
    assert f"run {run.pk}: done" in out and "test " in out
    if celery_worker_process is not None:
        assert run.node_hostname.startswith("test-")
