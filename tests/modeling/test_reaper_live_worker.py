"""The reaper against a run a live Celery worker is training (PostgreSQL + Redis + a real worker).

The reaper decides from the row alone; these tests check that the worker then does as the row
says: it stops at its next heartbeat, its finish never overwrites the reaped status, a message of
an earlier attempt is skipped after a requeue, too many restarts fail the run, and a worker's cold
shutdown fails the runs it was training.
"""

import os
import signal
from datetime import timedelta

import pytest
from celery.result import AsyncResult
from django.utils import timezone

from base.task_queue import enqueue
from modeling.models import RunStatus, TrainingRun
from modeling.training.config import resolve_config
from modeling.training.services import (
    TRAINING_TASK,
    launch_training_run,
    reap_stale_runs,
)
from tests.conftest import needs_broker, start_celery_worker, stop_celery_worker, wait_for

from .training_fixtures import follow, learnable_rows, make_snapshot

pytestmark = [pytest.mark.celery_worker]

# Long enough to be caught running (thousands of steps), short enough to finish when let run.
LONG = {
    "embedding_dim": 16,
    "hidden_dim": 16,
    "batch_size": 8,
    "lr": 0.01,
    "cpu_threads": 1,
    "epochs": 3,
    "patience": 3,
}


@pytest.fixture
def worker(transactional_db, celery_worker_process):
    if celery_worker_process is None:
        needs_broker()
    return celery_worker_process


@pytest.fixture
def snapshot(tmp_path):
    return make_snapshot(tmp_path / "snap", {"train": learnable_rows(2000, 1), "dev": learnable_rows(200, 2)})


def running_on_the_worker(run_id):
    wait_for(
        lambda: TrainingRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, step__gt=0).exists(),
        timeout=120,
        message="the run to be training on the worker",
    )
    return TrainingRun.objects.get(pk=run_id)


def task_outcome(task_id):
    return AsyncResult(task_id).get(timeout=120)


# The reaper's cutoff a minute ahead: every running run is stale. With a cutoff of now, a heartbeat
# the live worker committed between the reaper's clock read and its SELECT was newer than the
# cutoff, and the reaper rightly left the run alone (one whole CI run in six here).
AHEAD = -1


def test_a_reaped_run_stops_at_the_next_heartbeat_and_its_worker_never_overwrites_it(worker, snapshot):
    run = running_on_the_worker(launch_training_run(snapshot, "bilstm", config=LONG).pk)
    assert reap_stale_runs(minutes=AHEAD) == [run.pk]
    reaped = TrainingRun.objects.get(pk=run.pk)
    assert reaped.status == RunStatus.FAILED and reaped.error.startswith("node lost")

    # The worker's next heartbeat finds the row no longer running under its attempt and stops.
    assert task_outcome(run.celery_task_id) == {"run": run.pk, "status": "abandoned"}
    after = TrainingRun.objects.get(pk=run.pk)
    assert (after.status, after.error, after.finished_at) == (reaped.status, reaped.error, reaped.finished_at)
    assert after.results == {} and after.checkpoint_path == ""  # no finish was written over it
    assert after.step == reaped.step  # and no progress after the reaping


def test_after_a_requeue_the_old_attempt_stops_the_new_one_finishes_and_an_old_message_is_skipped(worker, snapshot):
    run = running_on_the_worker(launch_training_run(snapshot, "bilstm", config=LONG).pk)
    old_task_id = run.celery_task_id
    assert reap_stale_runs(minutes=AHEAD, requeue=True) == [run.pk]
    assert task_outcome(old_task_id) == {"run": run.pk, "status": "abandoned"}

    done, _ = follow(run.pk, timeout=300)
    assert done.status == RunStatus.DONE, done.error
    assert done.celery_task_id != old_task_id and done.results["restarts"] == 1
    # The old attempt's message, delivered again (a broker redelivery), is skipped: the run stays as it is.
    AsyncResult(old_task_id).forget()  # the first delivery's result is stored under the same id
    again = enqueue(TRAINING_TASK, run.pk, task_id=old_task_id)
    assert again.get(timeout=60) == {"run": run.pk, "status": RunStatus.DONE}
    unchanged = TrainingRun.objects.get(pk=run.pk)
    assert (unchanged.finished_at, unchanged.results, unchanged.celery_task_id) == (
        done.finished_at,
        done.results,
        done.celery_task_id,
    )


def test_a_run_requeued_past_max_restarts_is_failed_by_the_worker(worker, snapshot, settings):
    # The worker runs with the default TRAINING_MAX_RESTARTS=2: this is the third loss.
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash=snapshot.content_hash,
        model="cbow",
        config=resolve_config("cbow", {}),
        status=RunStatus.RUNNING,
        node_hostname="gpu9@lost",
        results={"restarts": 2},
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    assert reap_stale_runs(minutes=10, requeue=True) == [run.pk]
    failed, _ = follow(run.pk, timeout=120)
    assert failed.status == RunStatus.FAILED
    assert failed.error == "node lost 3 times (last on gpu9@lost); not retrying"
    assert failed.epoch == 0 and failed.finished_at is not None


def test_a_cold_shutdown_fails_the_run_its_worker_was_training(worker, snapshot, tmp_path):
    """A second worker takes the gpu queue alone (the session's worker stops consuming it), is
    caught training, and is shut down cold (SIGQUIT): its run is failed at once, not left
    `running` for the reaper."""
    from annotation_site.celery import app

    app.control.cancel_consumer("gpu", destination=[worker.nodename], reply=True, timeout=10)
    second = None
    try:
        second = start_celery_worker(f"shutdown-{os.getpid()}", "gpu", tmp_path / "second-worker.log")
        run = running_on_the_worker(launch_training_run(snapshot, "bilstm", config=LONG).pk)
        assert run.node_hostname == second.nodename
        stop_celery_worker(second, signal.SIGQUIT, whole_group=False)
        failed = TrainingRun.objects.get(pk=run.pk)
        assert failed.status == RunStatus.FAILED, (failed.status, second.log_path.read_text()[-2000:])
        assert failed.error == f"Celery worker {second.nodename} shut down (cold) during the run"
        assert failed.finished_at is not None
    finally:
        if second is not None and second.poll() is None:
            stop_celery_worker(second, signal.SIGKILL)
        app.control.add_consumer("gpu", destination=[worker.nodename], reply=True, timeout=10)
    # The message the cold shutdown left unacknowledged comes back to the session's worker, which skips it.
    wait_for(
        lambda: run.celery_task_id in worker.log_path.read_text(),
        timeout=120,
        message="the returned message to reach the session's worker",
    )
    assert TrainingRun.objects.get(pk=run.pk).error == failed.error
