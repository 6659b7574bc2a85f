"""A queued packed genre matrix (`genre_matrix --packed --queue`) on a real Celery worker of the
`gpu` queue (PostgreSQL + Redis): the runs that can share a step go as ONE task, the worker trains
them at once, each run ends with its lone run's results and shows its own progress on the
dashboard; runs that cannot share a step go one task each; a pack whose worker is killed leaves
every run to the reaper, as a lone run's killed worker does. The last two tests run the pack's
attempt in this process: a redelivered message takes its runs over, and a run the reaper requeued
is no longer the old message's."""

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from modeling.models import RunStatus, TrainingRun
from modeling.training.run_writes import lease_run
from modeling.training.services import (
    execute_packed_training_runs,
    execute_training_run,
    launch_packed_training_runs,
    launch_training_run,
    reap_stale_runs,
)
from tests.conftest import needs_broker, start_celery_worker, stop_celery_worker, wait_for

from .test_reaper_whole_worker_killed import running_members
from .training_fixtures import follow, learnable_rows, make_snapshot

pytestmark = [pytest.mark.celery_worker]

GENRES = ("fiction", "travel", "slate")
# Dropout 0: a packed run then computes its lone run's sums (vmap draws masks from one stream).
TINY: dict[str, Any] = {
    "embedding_dim": 8,
    "hidden_dim": 8,
    "epochs": 2,
    "batch_size": 16,
    "cpu_threads": 1,
    "dropout": 0,
    "step": "graphed",
}


@pytest.fixture
def worker(transactional_db, celery_worker_process):
    if celery_worker_process is None:
        needs_broker()
    return celery_worker_process


def received(log_text: str, task: str) -> list[str]:
    """The task ids of `task` the worker's log says it received."""
    marker = f"Task modeling.tasks.{task}["
    return [
        line.split(marker, 1)[1].split("]", 1)[0]
        for line in log_text.splitlines()
        if marker in line and line.endswith("] received")
    ]


def new_log(worker, start: int) -> str:
    return Path(worker.log_path).read_text()[start:]


def progress_on_the_dashboard(client: Client, runs: list[TrainingRun]) -> dict[int, dict]:
    ids = ",".join(str(run.pk) for run in runs)
    answer = client.get(reverse("dashboard:training_progress") + f"?view=detail&ids={ids}")
    return {item["id"]: item for item in answer.json()["items"]}


def test_a_queued_packed_matrix_is_one_task_whose_runs_each_end_as_their_lone_run(worker, tmp_path, researcher) -> None:
    splits = {
        "train": learnable_rows(90, 1),
        "dev_matched": learnable_rows(15, 2),
        "test_matched": learnable_rows(25, 3),
    }
    snapshot = make_snapshot(tmp_path / "snap", splits, researcher)
    log_start = len(Path(worker.log_path).read_text())

    call_command(
        "genre_matrix",
        "--snapshot",
        str(snapshot.pk),
        "--model",
        "bilstm",
        "--genres",
        ",".join(GENRES),
        "--config",
        json.dumps(TINY),
        "--packed",
        "--queue",
        stdout=StringIO(),
        stderr=StringIO(),
    )

    packed = {run.config["train_genre"]: run for run in TrainingRun.objects.filter(snapshot=snapshot)}
    assert sorted(packed) == sorted(GENRES)
    attempts = {run.celery_task_id for run in packed.values()}
    assert len(attempts) == 1  # one attempt for the pack: its task's id
    log = new_log(worker, log_start)
    assert received(log, "run_packed_training") == list(attempts)
    assert received(log, "run_training") == []  # no run went as a task of its own

    client = Client()
    client.force_login(researcher)
    shown = progress_on_the_dashboard(client, list(packed.values()))
    for genre in GENRES:
        run = packed[genre]
        assert run.status == RunStatus.DONE, run.error
        assert run.node_hostname == worker.nodename
        # Its own heartbeats reached its row: every epoch in its history, its device, its steps;
        # the dashboard's live part reads them as it reads a lone run's.
        assert [row["epoch"] for row in run.history] == list(range(1, TINY["epochs"] + 1))
        assert run.device.startswith("cpu") and run.heartbeat_at is not None
        item = shown[run.pk]
        assert item["status"] == RunStatus.DONE and item["finished"]
        assert item["epoch"] == item["total_epochs"] == TINY["epochs"]
        assert item["step"] == item["total_steps"] > 0 and item["progress"] == 1.0
        html = " ".join(item["html"].split())
        assert f"epoch {TINY['epochs']}/{TINY['epochs']}" in html and f"on {worker.nodename}" in html
    assert len({run.checkpoint_sha256 for run in packed.values()}) == 3  # three models, not one

    # Each genre's lone run at the same seed, trained here one by one: the same figures.
    for genre in GENRES:
        lone = launch_training_run(snapshot, "bilstm", config=dict(TINY, train_genre=genre), enqueue=False)
        execute_training_run(lone.pk)
        lone.refresh_from_db()
        assert lone.status == RunStatus.DONE, lone.error
        together = packed[genre].results
        assert together["accuracy"] == lone.results["accuracy"]
        assert [row["loss"] for row in together["history"]] == pytest.approx(
            [row["loss"] for row in lone.results["history"]], abs=1e-4
        )
        assert (together["best_epoch"], together["stopped_by"]) == (
            lone.results["best_epoch"],
            lone.results["stopped_by"],
        )


def test_runs_that_cannot_share_a_step_go_one_task_each(worker, tmp_path) -> None:
    splits = {"train": learnable_rows(60, 1), "dev": learnable_rows(15, 2)}
    snapshot = make_snapshot(tmp_path / "snap", splits)
    log_start = len(Path(worker.log_path).read_text())
    small = dict(TINY, epochs=1, step="eager")

    runs = launch_packed_training_runs(
        snapshot,
        "cbow",
        [
            dict(small, train_genre="fiction"),
            dict(small, train_genre="travel"),
            dict(small, train_genre="slate", hidden_dim=16),
        ],
    )

    ended = [follow(run.pk, timeout=120)[0] for run in runs]
    assert [run.status for run in ended] == [RunStatus.DONE] * 3, [run.error for run in ended]
    pack, alone = ended[:2], ended[2]
    assert pack[0].celery_task_id == pack[1].celery_task_id != alone.celery_task_id
    log = new_log(worker, log_start)
    assert received(log, "run_packed_training") == [pack[0].celery_task_id]
    assert received(log, "run_training") == [alone.celery_task_id]


# Long enough to be caught training (each genre a fifth of 5,000 pairs, batches of 8, five epochs).
LONG = {"embedding_dim": 16, "hidden_dim": 16, "batch_size": 8, "cpu_threads": 1, "epochs": 5, "patience": 5}


@contextmanager
def a_pack_training_on_a_victim(worker, tmp_path, researcher) -> Iterator[tuple[Any, list[TrainingRun]]]:
    """A second worker takes the gpu queue alone (the session's worker stops consuming it) and is
    caught training a pack of three runs, each with its own progress on the dashboard."""
    from annotation_site.celery import app

    splits = {"train": learnable_rows(5000, 1), "dev": learnable_rows(100, 2)}
    snapshot = make_snapshot(tmp_path / "snap", splits, researcher)
    app.control.cancel_consumer("gpu", destination=[worker.nodename], reply=True, timeout=10)
    victim = None
    try:
        victim = start_celery_worker(f"pack-victim-{os.getpid()}", "gpu", tmp_path / "victim.log")
        runs = launch_packed_training_runs(
            snapshot, "bilstm", [dict(LONG, train_genre=genre) for genre in GENRES], user=researcher
        )
        ids = [run.pk for run in runs]
        wait_for(
            lambda: TrainingRun.objects.filter(pk__in=ids, status=RunStatus.RUNNING, step__gt=0).count() == 3,
            timeout=180,
            message="every run of the pack to be training on the victim",
        )
        client = Client()
        client.force_login(researcher)
        for item in progress_on_the_dashboard(client, runs).values():
            assert item["status"] == RunStatus.RUNNING and 0 < item["step"] < item["total_steps"]
            assert not item["finished"] and f"on {victim.nodename}" in item["html"]
        yield victim, runs
    finally:
        if victim is not None and victim.poll() is None:
            stop_celery_worker(victim, signal.SIGKILL)
        app.control.add_consumer("gpu", destination=[worker.nodename], reply=True, timeout=10)


def test_a_pack_whose_whole_worker_is_killed_leaves_every_run_to_the_reaper(worker, tmp_path, researcher) -> None:
    """SIGKILL to the whole victim (no signal handler runs): every run stays `running` with a
    heartbeat that stopped, and the reaper fails each as it fails a lone run."""
    with a_pack_training_on_a_victim(worker, tmp_path, researcher) as (victim, runs):
        ids = [run.pk for run in runs]
        stop_celery_worker(victim, signal.SIGKILL)  # the whole process group: main process and child
        wait_for(lambda: not running_members(victim.pid), timeout=30, message="every process of the victim to die")
        left = list(TrainingRun.objects.filter(pk__in=ids).order_by("pk"))
        assert all(run.status == RunStatus.RUNNING and run.node_hostname == victim.nodename for run in left)

        # Nothing catches the kill: the heartbeats stop, and once they are stale the reaper takes every run.
        reaped: list[int] = []

        def all_reaped() -> bool:
            reaped.extend(reap_stale_runs(minutes=0.05))
            return sorted(reaped) == ids

        wait_for(all_reaped, timeout=60, message="the reaper to fail every run of the pack")
        for before in left:
            after = TrainingRun.objects.get(pk=before.pk)
            assert after.status == RunStatus.FAILED and after.finished_at is not None
            assert after.error.startswith(f"node lost: no heartbeat from {victim.nodename}"), after.error
            assert after.heartbeat_at == before.heartbeat_at  # no heartbeat after the kill
            assert not after.checkpoint_sha256 and not after.results


def test_a_cold_shutdown_mid_pack_fails_every_run_of_it(worker, tmp_path, researcher) -> None:
    """SIGQUIT to the victim's main process (a cold shutdown): every run of the pack is failed at
    once, as a lone run's is, not left `running` for the reaper; the message it left unacknowledged
    comes back to the session's worker, which trains none of them again."""
    with a_pack_training_on_a_victim(worker, tmp_path, researcher) as (victim, runs):
        stop_celery_worker(victim, signal.SIGQUIT, whole_group=False)
        for run in runs:
            failed = TrainingRun.objects.get(pk=run.pk)
            assert failed.status == RunStatus.FAILED, (failed.status, victim.log_path.read_text()[-2000:])
            assert failed.error == f"Celery worker {victim.nodename} shut down (cold) during the run"
    wait_for(
        lambda: f"run_packed_training[{runs[0].celery_task_id}] succeeded" in worker.log_path.read_text(),
        timeout=120,
        message="the returned message to reach the session's worker",
    )
    assert [TrainingRun.objects.get(pk=run.pk).error for run in runs] == [
        f"Celery worker {victim.nodename} shut down (cold) during the run"
    ] * 3


def _pack_caught_running(tmp_path) -> tuple[list[TrainingRun], str]:
    """A pack launched (its message never sent: the test's transaction never commits) and leased
    by a node that was then lost: every run `running` under the pack's attempt."""
    snapshot = make_snapshot(tmp_path / "snap", {"train": learnable_rows(60, 1), "dev": learnable_rows(15, 2)})
    configs = [dict(TINY, epochs=1, step="eager", train_genre=genre) for genre in GENRES[:2]]
    runs = launch_packed_training_runs(snapshot, "cbow", configs)
    (attempt,) = {run.celery_task_id for run in runs}
    for run in runs:
        assert lease_run(run.pk, "lost-node@gpu", attempt) is not None
    return runs, attempt


@pytest.mark.django_db
def test_a_redelivered_pack_takes_every_run_over(tmp_path) -> None:
    runs, attempt = _pack_caught_running(tmp_path)

    outcomes = execute_packed_training_runs([run.pk for run in runs], hostname="next-node@gpu", task_id=attempt)

    assert outcomes == [{"run": run.pk, "status": "done"} for run in runs]
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.DONE and run.node_hostname == "next-node@gpu"
        assert run.results["restarts"] == 1  # one attempt lost, as a lone run's redelivery counts it


@pytest.mark.django_db
def test_runs_the_reaper_requeued_are_skipped_by_the_packs_old_message(tmp_path) -> None:
    runs, attempt = _pack_caught_running(tmp_path)
    assert sorted(reap_stale_runs(minutes=-1, requeue=True)) == [run.pk for run in runs]

    outcomes = execute_packed_training_runs([run.pk for run in runs], hostname="late-node@gpu", task_id=attempt)

    assert outcomes == [{"run": run.pk, "status": RunStatus.QUEUED} for run in runs]
    for run in runs:
        run.refresh_from_db()
        # Each is a lone run now, under an attempt of its own, waiting for its own message.
        assert run.status == RunStatus.QUEUED and run.celery_task_id != attempt
        assert run.node_hostname == "lost-node@gpu" and run.results == {"restarts": 1}
