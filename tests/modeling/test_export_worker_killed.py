"""A Celery worker killed by SIGKILL in the middle of a snapshot export, and an import's process
killed the same way: the snapshot is started again by the reaper and finishes;
the import ends failed with a message. Before, both stayed `running` (the export's message came
back only after the broker's visibility timeout, 6 h; the import's never).

PostgreSQL + Redis + real processes. The export (and the import) is held mid-way, deterministically,
by an ACCESS EXCLUSIVE lock this test takes on the pair table from a connection of its own: the
work has taken its row and is beating when it blocks on its first read (or write) of pairs. The
process is killed there, the lock released, and the reaper called directly with a short bound
once the heartbeat is that old (its schedule is tests/test_beat_schedule.py's).
"""

import os
import signal
import subprocess
import sys
from datetime import timedelta

import psycopg2
import pytest
from django.db import connection
from django.utils import timezone

from annotation_site.wiring import long_task_kinds
from base.long_tasks import JobStatus, reap_stale_long_tasks
from corpus.models import ImportStatus, Pair
from importers.models import CorpusImport
from modeling.models import Snapshot
from modeling.snapshots.services import request_snapshot
from tests.conftest import (
    REPO_ROOT,
    celery_subprocess_env,
    needs_broker,
    start_celery_worker,
    stop_celery_worker,
    wait_for,
    wait_until_answering,
)
from tests.importers.helpers import E, N, ensure_genres, make_labelled_pairs, snli_record, write_jsonl

from .test_reaper_whole_worker_killed import running_members

pytestmark = [pytest.mark.celery_worker, pytest.mark.slow]

STALE_SECONDS = 2.0  # the reaper's bound in these tests; the work beats every BEAT_SECONDS
BEAT = {"LONG_TASK_HEARTBEAT_SECONDS": "0.5"}


@pytest.fixture
def session_worker(transactional_db, celery_worker_process):
    """The session's worker stops taking default-queue tasks while the test's own workers run."""
    from annotation_site.celery import app

    if celery_worker_process is None:
        needs_broker()
    app.control.cancel_consumer("default", destination=[celery_worker_process.nodename], reply=True, timeout=10)
    yield celery_worker_process
    app.control.add_consumer("default", destination=[celery_worker_process.nodename], reply=True, timeout=10)


class PairTableLock:
    """ACCESS EXCLUSIVE on the pair table from a connection of the test's own, until released."""

    def __init__(self):
        db = connection.settings_dict
        self.connection = psycopg2.connect(
            dbname=db["NAME"], user=db["USER"] or "postgres", host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432
        )
        with self.connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {Pair._meta.db_table} IN ACCESS EXCLUSIVE MODE")

    def release(self):
        if not self.connection.closed:
            self.connection.rollback()
            self.connection.close()


def stale_now(model, pk):
    row = model.objects.get(pk=pk)
    return row.heartbeat_at is not None and row.heartbeat_at < timezone.now() - timedelta(seconds=STALE_SECONDS)


def reap():
    return reap_stale_long_tasks(long_task_kinds(), stale=STALE_SECONDS)


def test_an_export_whose_worker_is_killed_mid_way_is_started_again_and_finishes(session_worker, tmp_path):
    ensure_genres("captions")
    from corpus.models import Dataset

    dataset = Dataset.objects.create(slug="killed-export", name="killed export")
    make_labelled_pairs(dataset, [[E, E, N, E, E]] * 30)
    victim = rescuer = lock = None
    try:
        victim = start_celery_worker(f"victim-{os.getpid()}", "default", tmp_path / "victim.log", extra_env=BEAT)
        lock = PairTableLock()
        snapshot = request_snapshot(None, datasets=["killed-export"])
        wait_for(
            lambda: Snapshot.objects.filter(
                pk=snapshot.pk, status=JobStatus.RUNNING, heartbeat_at__isnull=False
            ).exists(),
            timeout=60,
            message="the export to be running on the victim",
        )
        stop_celery_worker(victim, signal.SIGKILL)  # main process and pool child at once
        wait_for(lambda: not running_members(victim.pid), timeout=30, message="every process of the worker to die")
        lock.release()
        assert Snapshot.objects.get(pk=snapshot.pk).status == JobStatus.RUNNING  # nothing caught the kill

        rescuer = start_celery_worker(
            f"rescuer-{os.getpid()}", "default", tmp_path / "rescuer.log", extra_env=BEAT, wait=False
        )
        wait_until_answering(rescuer)
        wait_for(lambda: stale_now(Snapshot, snapshot.pk), timeout=60, message="the heartbeat to go stale")
        assert reap() == [f"modeling.Snapshot {snapshot.pk} requeued (restart 1 of 2)"]
        wait_for(
            lambda: (
                Snapshot.objects.filter(pk=snapshot.pk)
                .exclude(status__in=[JobStatus.PENDING, JobStatus.RUNNING])
                .exists()
            ),
            timeout=120,
            message="the restarted export to end",
        )
        done = Snapshot.objects.get(pk=snapshot.pk)
        assert (done.status, done.restarts, done.error, done.row_count) == (JobStatus.DONE, 1, "", 30)
        assert done.files.exists()
        assert reap() == []  # a done snapshot is never touched again
    finally:
        if lock is not None:
            lock.release()
        for process in (victim, rescuer):
            if process is not None and process.poll() is None:
                stop_celery_worker(process)


def test_an_import_whose_process_is_killed_mid_way_ends_failed_with_a_message(transactional_db, tmp_path):
    ensure_genres("captions")
    records = [snli_record(f"k{i}", [E, N, E, E, E], premise=f"Premise {i} of the file.") for i in range(300)]
    path = write_jsonl(tmp_path / "killed_dev.jsonl", records)
    lock = PairTableLock()
    command = [
        sys.executable,
        "manage.py",
        "import_pairs",
        "--dataset",
        "killed-import",
        "--no-tag",
        "--no-progress",
        str(path),
    ]
    log = open(tmp_path / "import.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        command,
        cwd=REPO_ROOT,
        env=celery_subprocess_env(BEAT),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for(
            lambda: CorpusImport.objects.filter(status=ImportStatus.RUNNING, heartbeat_at__isnull=False).exists(),
            timeout=60,
            message="the import to be running",
        )
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        lock.release()
        record = CorpusImport.objects.get()
        assert record.status == ImportStatus.RUNNING  # nothing caught the kill
        wait_for(lambda: stale_now(CorpusImport, record.pk), timeout=60, message="the heartbeat to go stale")
        assert reap() == [f"importers.CorpusImport {record.pk} failed"]
        record.refresh_from_db()
        assert record.status == ImportStatus.FAILED and record.finished_at is not None
        assert record.error.startswith("the process running the import stopped (no heartbeat since ")
        assert record.error.endswith("Run the import again: what is already in the dataset is skipped.")
        assert not Pair.objects.filter(dataset__slug="killed-import").exists()  # all or nothing
    finally:
        lock.release()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        log.close()
