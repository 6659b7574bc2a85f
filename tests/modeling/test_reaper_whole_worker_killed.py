"""A whole Celery worker killed by SIGKILL (its main process and its pool child at once: no
signal handler, no cold-shutdown hook runs) leaves its training run `running` with a heartbeat
that stops. Celery beat runs the reaper on its schedule (settings.CELERY_BEAT_SCHEDULE, as the
compose `beat` service does), and the run ends failed within the reaper's window, without a human.

PostgreSQL + Redis + real processes: the victim worker (gpu queue), a worker for the default
queue (where the reaper task runs, with a short TRAINING_STALE_MINUTES) and `celery beat` (with a
short REAPER_INTERVAL_SECONDS). The session's worker stops consuming both queues meanwhile. Beat
starts once the victim is dead and its run seen still `running`, so no reaper call can come
before the kill: a run is "lost" after three missed heartbeats, not a dozen.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from modeling.models import RunStatus, TrainingRun
from modeling.training.services import launch_training_run
from tests.conftest import (
    REPO_ROOT,
    celery_subprocess_env,
    start_celery_worker,
    stop_celery_worker,
    wait_for,
    wait_until_answering,
)

from .test_reaper_live_worker import LONG, running_on_the_worker, snapshot, worker  # noqa: F401 - fixtures

pytestmark = [pytest.mark.celery_worker, pytest.mark.slow]

STALE_MINUTES = 0.1  # 6 s without a heartbeat (one every TRAINING_HEARTBEAT_SECONDS=2) is "lost"
INTERVAL_SECONDS = 2


class BeatProcess(subprocess.Popen[bytes]):
    """Celery beat as the suite starts it (start_celery_beat): its log beside it."""

    log: IO[str]
    log_path: Path


def start_celery_beat(tmp_path, extra_env):
    log = open(tmp_path / "beat.log", "w")  # noqa: SIM115 - closed below
    celery = str(Path(sys.executable).parent / "celery")
    process = BeatProcess(
        [celery, "-A", "annotation_site", "beat", "-l", "info", "-s", str(tmp_path / "beat-schedule")],
        cwd=REPO_ROOT,
        env=celery_subprocess_env(extra_env),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    process.log, process.log_path = log, tmp_path / "beat.log"
    return process


def running_members(pgid):
    """Pids of the process group that still run (a killed child waiting to be reaped is not running)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group = fields[0], int(fields[2])
        if group == pgid and state not in ("Z", "X"):
            members.append(int(stat.parent.name))
    return members


def test_a_whole_worker_killed_by_sigkill_has_its_run_failed_by_the_scheduled_reaper(worker, snapshot, tmp_path):  # noqa: F811
    from annotation_site.celery import app

    for queue in ("gpu", "default"):
        app.control.cancel_consumer(queue, destination=[worker.nodename], reply=True, timeout=10)
    victim = reaper_host = beat = None
    try:
        # The two workers start side by side.
        victim = start_celery_worker(f"victim-{os.getpid()}", "gpu", tmp_path / "victim.log", wait=False)
        reaper_host = start_celery_worker(
            f"reaper-{os.getpid()}",
            "default",
            tmp_path / "reaper.log",
            extra_env={"TRAINING_STALE_MINUTES": str(STALE_MINUTES)},
            wait=False,
        )
        wait_until_answering(victim)
        wait_until_answering(reaper_host)

        run = running_on_the_worker(launch_training_run(snapshot, "bilstm", config=LONG).pk)
        assert run.node_hostname == victim.nodename
        stop_celery_worker(victim, signal.SIGKILL)  # the whole process group: main process and child
        wait_for(lambda: not running_members(victim.pid), timeout=30, message="every process of the worker to die")
        assert TrainingRun.objects.get(pk=run.pk).status == RunStatus.RUNNING  # nothing caught the kill

        # No human: beat sends the reaper task, the default-queue worker runs it once the heartbeat is stale.
        beat = start_celery_beat(tmp_path, {"REAPER_INTERVAL_SECONDS": str(INTERVAL_SECONDS)})
        wait_for(
            lambda: TrainingRun.objects.filter(pk=run.pk, status=RunStatus.FAILED).exists(),
            timeout=STALE_MINUTES * 60 + INTERVAL_SECONDS + 120,
            interval=1,
            message="the scheduled reaper to fail the run of the killed worker",
        )
        failed = TrainingRun.objects.get(pk=run.pk)
        assert failed.error.startswith(f"node lost: no heartbeat from {victim.nodename}"), failed.error
        assert failed.finished_at is not None
        assert "modeling.tasks.reap_training_runs" in beat.log_path.read_text()  # sent by beat, on schedule
        assert f"[{run.pk}]" in reaper_host.log_path.read_text()  # and run by the worker, which logged it
    finally:
        if beat is not None:
            beat.send_signal(signal.SIGTERM)
            beat.wait(timeout=20)
            beat.log.close()
        for process in (victim, reaper_host):
            if process is not None and process.poll() is None:
                stop_celery_worker(process)
        for queue in ("gpu", "default"):
            app.control.add_consumer(queue, destination=[worker.nodename], reply=True, timeout=10)
