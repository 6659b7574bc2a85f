"""Several training runs at once on one node (TRAINING_RUNS_PER_NODE), and the node's per-GPU Celery workers.

The PostgreSQL test runs a real Celery worker started as a node of two runs starts it (a prefork
pool of 2, prefetch 1): two runs train at the same time, each with its own progress; the reaper
takes one and the other finishes with its checkpoint and results, untouched.
"""

import os
from datetime import timedelta

import pytest
from celery.result import AsyncResult
from django.utils import timezone

from modeling.models import RunStatus, TrainingRun
from modeling.training.node import NodeConfigError, celery_worker_commands, detect_gpus, main, runs_per_node
from modeling.training.services import launch_training_run, reap_stale_runs
from tests.conftest import start_celery_worker, stop_celery_worker, wait_for

from .test_reaper_live_worker import LONG, snapshot, worker  # noqa: F401 - fixtures
from .training_fixtures import follow


def test_runs_per_node_is_a_bounded_whole_number():
    assert runs_per_node({}) == 1
    assert runs_per_node({"TRAINING_RUNS_PER_NODE": "4"}) == 4
    for bad in ("0", "two", "65", "-1"):
        with pytest.raises(NodeConfigError, match="TRAINING_RUNS_PER_NODE"):
            runs_per_node({"TRAINING_RUNS_PER_NODE": bad})


def test_gpus_come_from_the_setting_then_cuda_visible_devices_then_nvidia_smi(tmp_path):
    fake_smi = tmp_path / "nvidia-smi"
    fake_smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 (UUID: GPU-a)'\necho 'GPU 1: NVIDIA H100 (UUID: GPU-b)'\n")
    fake_smi.chmod(0o755)
    assert detect_gpus({"TRAINING_GPUS": "1,3"}, nvidia_smi=str(fake_smi)) == ["1", "3"]
    assert detect_gpus({"TRAINING_GPUS": "none", "CUDA_VISIBLE_DEVICES": "0"}) == []
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "2"}, nvidia_smi=str(fake_smi)) == ["2"]
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": ""}, nvidia_smi=str(fake_smi)) == []
    assert detect_gpus({}, nvidia_smi=str(fake_smi)) == ["0", "1"]
    assert detect_gpus({}, nvidia_smi="") == []  # no driver: a CPU node
    with pytest.raises(NodeConfigError, match="TRAINING_GPUS"):
        detect_gpus({"TRAINING_GPUS": "0;1"})


def test_a_node_with_several_gpus_runs_one_worker_per_gpu_each_seeing_only_its_own():
    commands = celery_worker_commands(
        3, ["0", "1"], ["--max-memory-per-child", "9000000"], environ={"PATH": "/bin"}, cpus=16
    )
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in commands] == ["0", "1"]
    assert [env["OMP_NUM_THREADS"] for _, env in commands] == ["2", "2"]  # 16 cores shared by 6 runs
    for gpu, (argv, env) in zip(["0", "1"], commands, strict=True):
        assert argv[argv.index("-n") + 1] == f"gpu{gpu}@%h"
        assert argv[argv.index("--concurrency") + 1] == "3" and argv[argv.index("--prefetch-multiplier") + 1] == "1"
        assert argv[argv.index("-Q") + 1] == "gpu" and argv[argv.index("--pool") + 1] == "prefork"
        assert argv[-2:] == ["--max-memory-per-child", "9000000"] and env["PATH"] == "/bin"
    # One GPU or none: one worker named as before, the GPU pinned when there is one.
    [(argv, env)] = celery_worker_commands(2, ["1"], environ={})
    assert argv[argv.index("-n") + 1] == "gpu@%h" and env["CUDA_VISIBLE_DEVICES"] == "1"
    [(argv, env)] = celery_worker_commands(1, [], environ={}, cpus=2)
    assert "CUDA_VISIBLE_DEVICES" not in env and argv[argv.index("--concurrency") + 1] == "1"
    assert env["OMP_NUM_THREADS"] == "2"
    [(_, env)] = celery_worker_commands(4, [], environ={"OMP_NUM_THREADS": "3"}, cpus=2)
    assert env["OMP_NUM_THREADS"] == "3"  # the operator's choice stands


def test_the_node_command_says_what_it_would_start_and_refuses_a_bad_setting(monkeypatch, capsys):
    monkeypatch.setenv("TRAINING_RUNS_PER_NODE", "2")
    monkeypatch.setenv("TRAINING_GPUS", "0,1")
    assert main(["--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("training node: CUDA_VISIBLE_DEVICES=0 ")
    assert "--concurrency 2" in lines[1] and "-n gpu1@%h" in lines[1]
    monkeypatch.setenv("TRAINING_RUNS_PER_NODE", "lots")
    assert main(["--dry-run"]) == 2
    assert "TRAINING_RUNS_PER_NODE must be a whole number" in capsys.readouterr().err


def reap_only(run_id):
    """Make one run's heartbeat stale and reap: the other run's fresh heartbeats keep it out."""
    for _ in range(20):  # a heartbeat of the run itself may land between the two statements
        TrainingRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now() - timedelta(hours=1))
        reaped = reap_stale_runs(minutes=10)
        if reaped:
            return reaped
    raise AssertionError(f"run {run_id} was never reaped")


@pytest.mark.celery_worker
def test_two_runs_on_one_node_train_at_once_and_the_reaper_takes_one_while_the_other_finishes(
    worker,  # noqa: F811
    snapshot,  # noqa: F811
    tmp_path,
):
    from annotation_site.celery import app

    app.control.cancel_consumer("gpu", destination=[worker.nodename], reply=True, timeout=10)
    node = None
    try:
        node = start_celery_worker(
            f"node-{os.getpid()}",
            "gpu",
            tmp_path / "node.log",
            concurrency=runs_per_node({"TRAINING_RUNS_PER_NODE": "2"}),
        )
        doomed = launch_training_run(snapshot, "bilstm", config=dict(LONG, epochs=50, patience=50))
        survivor = launch_training_run(snapshot, "cbow", config=dict(LONG, batch_size=16, epochs=25, patience=25))

        def both_training():
            runs = list(TrainingRun.objects.filter(pk__in=[doomed.pk, survivor.pk], status=RunStatus.RUNNING))
            return len(runs) == 2 and all(run.step > 0 for run in runs) and runs

        wait_for(both_training, timeout=180, message="both runs to be training on the node at once")
        doomed, survivor = TrainingRun.objects.get(pk=doomed.pk), TrainingRun.objects.get(pk=survivor.pk)
        assert doomed.node_hostname == survivor.node_hostname == node.nodename
        assert doomed.celery_task_id != survivor.celery_task_id
        assert (doomed.total_steps, survivor.total_steps) == (250 * 50, 125 * 25)  # each its own progress

        assert reap_only(doomed.pk) == [doomed.pk]
        # The survivor is followed from the moment of the reaping (waiting for the reaped run's task
        # first gave a loaded machine time to finish the survivor unseen).
        done, seen = follow(survivor.pk, timeout=600)
        assert AsyncResult(doomed.celery_task_id).get(timeout=120) == {"run": doomed.pk, "status": "abandoned"}
        reaped = TrainingRun.objects.get(pk=doomed.pk)
        assert reaped.status == RunStatus.FAILED and reaped.error.startswith("node lost")
        assert reaped.checkpoint_path == "" and reaped.results == {}

        assert done.status == RunStatus.DONE, (done.error, node.log_path.read_text()[-3000:])
        assert done.step == done.total_steps == 125 * 25 and done.results["epochs_run"] == 25
        assert done.checkpoint_path and done.checkpoint_sha256
        assert any(status == RunStatus.RUNNING for status, *_ in seen)  # it kept training after the reaping
        assert TrainingRun.objects.get(pk=doomed.pk).step == reaped.step  # and the reaped one stopped
    finally:
        if node is not None:
            stop_celery_worker(node)
        app.control.add_consumer("gpu", destination=[worker.nodename], reply=True, timeout=10)
