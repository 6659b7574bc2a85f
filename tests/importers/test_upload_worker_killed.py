"""An uploaded file's import whose Celery worker is killed with SIGKILL mid-way:
the reaper queues it again and another worker imports it, once, from the file in storage, which is
then removed; killed past LONG_TASK_MAX_RESTARTS it is failed and the file removed. Before, an
upload's import killed this way ended failed (never retried) and its upload stayed on disk.

PostgreSQL + Redis + real worker processes, held mid-way as tests/modeling/test_export_worker_killed.py
holds an export: an ACCESS EXCLUSIVE lock on the pair table from the test's own connection."""

import os
import signal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation_site.wiring import long_task_kinds
from base.long_tasks import reap_stale_long_tasks
from base.uploads import upload_storage
from corpus.models import ImportStatus, Pair
from importers.models import CorpusImport
from importers.services import queue_pairs_upload
from tests.conftest import needs_broker, start_celery_worker, stop_celery_worker, wait_for
from tests.importers.helpers import E, N, ensure_genres, snli_record
from tests.modeling.test_export_worker_killed import BEAT, STALE_SECONDS, PairTableLock, stale_now
from tests.modeling.test_reaper_whole_worker_killed import running_members

pytestmark = [pytest.mark.celery_worker, pytest.mark.slow]

PAIRS = 40


@pytest.fixture
def session_worker_aside(transactional_db, celery_worker_process):
    """The session's worker stops taking default-queue tasks while the test's own workers run."""
    from annotation_site.celery import app

    if celery_worker_process is None:
        needs_broker()
    app.control.cancel_consumer("default", destination=[celery_worker_process.nodename], reply=True, timeout=10)
    # Tasks that earlier tests queued while the session's worker was busy (an arrival's tagging of
    # their pairs) would reach the victim first and wait on the pair table's lock, leaving the
    # import queued behind them: the queue starts empty, as on a worker that only imports.
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("default")
    yield
    app.control.add_consumer("default", destination=[celery_worker_process.nodename], reply=True, timeout=10)


def upload():
    import json

    lines = [
        json.dumps(snli_record(f"u{i}", [E, N, E, E, E], premise=f"Premise {i} of the upload.")) for i in range(PAIRS)
    ]
    return SimpleUploadedFile("killed_dev.jsonl", ("\n".join(lines) + "\n").encode())


def killed_mid_import(tmp_path):
    """An upload queued and taken by a worker (sharing this test's DATA_DIR: one host) that is
    killed with SIGKILL while its import runs; the row as the kill left it."""
    ensure_genres("captions")
    lock = PairTableLock()
    victim = start_celery_worker(f"victim-{os.getpid()}", "default", tmp_path / "victim.log", extra_env=BEAT)
    try:
        run = queue_pairs_upload(upload(), "killed-upload")
        wait_for(
            lambda: CorpusImport.objects.filter(pk=run.pk, status="running", heartbeat_at__isnull=False).exists(),
            timeout=60,
            message="the import to be running on the victim",
        )
        stop_celery_worker(victim, signal.SIGKILL)
        wait_for(lambda: not running_members(victim.pid), timeout=30, message="every process of the worker to die")
    finally:
        lock.release()
        if victim.poll() is None:
            stop_celery_worker(victim)
    run.refresh_from_db()
    assert run.status == ImportStatus.RUNNING and upload_storage().exists(run.upload)  # nothing caught the kill
    wait_for(lambda: stale_now(CorpusImport, run.pk), timeout=60, message="the heartbeat to go stale")
    return run


def test_an_upload_whose_worker_is_killed_is_imported_once_by_the_restart(session_worker_aside, tmp_path):
    run = killed_mid_import(tmp_path)
    rescuer = start_celery_worker(f"rescuer-{os.getpid()}", "default", tmp_path / "rescuer.log", extra_env=BEAT)
    try:
        assert reap_stale_long_tasks(long_task_kinds(), stale=STALE_SECONDS) == [
            f"importers.CorpusImport {run.pk} requeued (restart 1 of 2)"
        ]
        wait_for(
            lambda: CorpusImport.objects.filter(pk=run.pk, status__in=["done", "failed"]).exists(),
            timeout=120,
            message="the restarted import to end",
        )
        run.refresh_from_db()
        assert (run.status, run.restarts, run.pairs_created) == (ImportStatus.DONE, 1, PAIRS), run.error
        # The file goes once the row says done (base.uploads.import_upload, after the import's commit):
        # waited for before the worker is stopped, which would end the task between the two (a CI run
        # on a slow machine failed so).
        wait_for(lambda: not upload_storage().exists(run.upload), timeout=60, message="the upload to be removed")
    finally:
        stop_celery_worker(rescuer)
    assert Pair.objects.filter(dataset__slug="killed-upload").count() == PAIRS  # once


def test_an_upload_killed_past_the_bound_is_failed_and_its_file_removed(session_worker_aside, tmp_path):
    run = killed_mid_import(tmp_path)
    assert reap_stale_long_tasks(long_task_kinds(), stale=STALE_SECONDS, restarts=0) == [
        f"importers.CorpusImport {run.pk} failed"
    ]
    run.refresh_from_db()
    assert run.status == ImportStatus.FAILED and run.error.endswith("what is already in the dataset is skipped.")
    assert not upload_storage().exists(run.upload)
    assert not Pair.objects.filter(dataset__slug="killed-upload").exists()
