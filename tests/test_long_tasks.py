"""Long tasks survive a dead process: a `running` row whose heartbeat stopped is
started again (a bounded number of times) or failed with a message, by the one reaper
(base/long_tasks.py), instead of staying `running` until the broker's visibility
timeout (6 h). Rows here are made stale by hand; tests/modeling/test_export_worker_killed.py kills
a real Celery worker and an import's process on PostgreSQL."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation_site.wiring import long_task_kinds, reap_long_tasks
from artifacts.models import MonitorRefresh, TaggingJob
from base.long_tasks import JobStatus, heartbeat, reap_stale_long_tasks
from base.task_queue import task_named
from corpus.models import Dataset, ImportStatus
from importers.models import CorpusImport
from modeling.models import Snapshot
from modeling.snapshots.services import ExportRefused, create_snapshot, export_snapshot
from quality.models import AggregationRun
from tests.conftest import wait_for
from tests.present import present


def silent_for(minutes):
    return timezone.now() - timedelta(minutes=minutes)


def running_snapshot(*, heartbeat_minutes_ago, restarts=0):
    snapshot = create_snapshot(None)
    Snapshot.objects.filter(pk=snapshot.pk).update(
        status=JobStatus.RUNNING,
        started_at=silent_for(heartbeat_minutes_ago + 1),
        heartbeat_at=silent_for(heartbeat_minutes_ago),
        progress=0.4,
        restarts=restarts,
    )
    return Snapshot.objects.get(pk=snapshot.pk)


def test_an_export_whose_heartbeat_stopped_is_started_again_and_finishes(db, django_capture_on_commit_callbacks):
    snapshot = running_snapshot(heartbeat_minutes_ago=10)

    def run_here(
        task_name, *args
    ):  # the registered task, run in this process (a worker's run is in test_export_worker_killed)
        return task_named(task_name).apply(args=args)

    with django_capture_on_commit_callbacks(execute=True):
        reaped = reap_stale_long_tasks(long_task_kinds(), enqueue=run_here)
    assert reaped == [f"modeling.Snapshot {snapshot.pk} requeued (restart 1 of 2)"]
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.DONE and snapshot.restarts == 1
    assert snapshot.progress == 1.0 and snapshot.error == ""


def test_an_export_lost_more_often_than_the_bound_is_failed_with_a_message(db, django_capture_on_commit_callbacks):
    snapshot = running_snapshot(heartbeat_minutes_ago=10, restarts=2)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        reap_long_tasks()
    assert queued == []  # nothing started again
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.FAILED and snapshot.finished_at is not None
    assert snapshot.error.startswith("the process running the export stopped (no heartbeat since ")
    assert "after 2 restart(s): failed. Request a new snapshot." in snapshot.error


def test_a_task_that_beats_or_is_not_running_is_left_alone(db):
    beating = running_snapshot(heartbeat_minutes_ago=0.2)
    done = create_snapshot(None)
    Snapshot.objects.filter(pk=done.pk).update(status=JobStatus.DONE, heartbeat_at=silent_for(60))
    pending = create_snapshot(None)
    assert reap_long_tasks() == []
    assert Snapshot.objects.get(pk=beating.pk).status == JobStatus.RUNNING
    assert Snapshot.objects.get(pk=done.pk).status == JobStatus.DONE
    assert Snapshot.objects.get(pk=pending.pk).status == JobStatus.PENDING


def test_a_row_that_never_beat_is_judged_by_when_it_started(db):
    """Rows left running before heartbeats existed (heartbeat_at empty) count from their start."""
    old = create_snapshot(None)
    Snapshot.objects.filter(pk=old.pk).update(status=JobStatus.RUNNING, started_at=silent_for(30))
    recent = create_snapshot(None)
    Snapshot.objects.filter(pk=recent.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    reaped = reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: None)
    assert reaped == [f"modeling.Snapshot {old.pk} requeued (restart 1 of 2)"]
    assert Snapshot.objects.get(pk=old.pk).status == JobStatus.PENDING
    assert Snapshot.objects.get(pk=recent.pk).status == JobStatus.RUNNING


def test_an_export_thought_dead_never_marks_the_snapshot_done_over_its_restart(db):
    """The reaper restarts an export whose process it believed dead; if that process was only slow,
    its end must not mark the snapshot done (or failed) under the restart, which owns the row now."""
    snapshot = create_snapshot(None)

    def reaped_meanwhile(datasets, filters, directory):
        # Mid-export (the extra files are written after the split files): the heartbeat looks stale.
        reap_stale_long_tasks(long_task_kinds(), stale=-60, enqueue=lambda *args: None)
        return {}

    with pytest.raises(ExportRefused, match="taken over by a restarted export"):
        export_snapshot(snapshot, extra_files=[reaped_meanwhile])
    snapshot.refresh_from_db()
    assert (snapshot.status, snapshot.restarts) == (JobStatus.PENDING, 1)
    assert not snapshot.files.exists()
    assert "started again from scratch (restart 1 of 2)" in snapshot.error
    export_snapshot(snapshot, extra_files=())  # the restart, as the queued task runs it
    snapshot.refresh_from_db()
    assert (snapshot.status, snapshot.restarts, snapshot.error) == (JobStatus.DONE, 1, "")


def test_an_aggregation_run_and_a_tagging_job_are_queued_again(db, django_capture_on_commit_callbacks):
    dataset = Dataset.objects.create(slug="lost-work", name="lost work")
    run = AggregationRun.objects.create(
        dataset=dataset, status=JobStatus.RUNNING, started_at=silent_for(20), heartbeat_at=silent_for(10)
    )
    job = TaggingJob.objects.create(dataset=dataset, status=JobStatus.RUNNING, heartbeat_at=silent_for(10))
    sent = []
    with django_capture_on_commit_callbacks(execute=True):
        reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: sent.append(args))
    assert sorted(sent) == sorted([("quality.aggregate_labels", run.pk), ("artifacts.tag_pairs", job.pk)])
    run.refresh_from_db()
    job.refresh_from_db()
    assert (run.status, run.restarts) == (JobStatus.PENDING, 1)
    assert (job.status, job.restarts) == (JobStatus.QUEUED, 1)


def test_an_import_and_a_monitor_refresh_are_failed_not_restarted(db):
    """An import run by a command has its file on the machine of the command that died, and a
    refresh is made anew by its next trigger: both end failed, saying what to do (an uploaded
    file's import is restarted: below)."""
    dataset = Dataset.objects.create(slug="lost-import", name="lost import")
    record = CorpusImport.objects.create(dataset=dataset, source="big_dev.jsonl", split="dev", bytes_total=100)
    CorpusImport.objects.filter(pk=record.pk).update(started_at=silent_for(20), heartbeat_at=silent_for(10))
    refresh = MonitorRefresh.objects.create(dataset=dataset, heartbeat_at=silent_for(10))
    reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: pytest.fail(f"queued {args}"))
    record.refresh_from_db()
    refresh.refresh_from_db()
    assert record.status == ImportStatus.FAILED and record.finished_at is not None
    assert record.error.endswith("failed. Run the import again: what is already in the dataset is skipped.")
    assert refresh.status == JobStatus.FAILED and "The next refresh runs on schedule." in refresh.error


def test_the_heartbeat_beats_from_its_own_thread_while_the_work_runs(transactional_db):
    snapshot = create_snapshot(None)
    Snapshot.objects.filter(pk=snapshot.pk).update(status=JobStatus.RUNNING)
    with heartbeat(Snapshot, snapshot.pk, seconds=0.05):
        first = Snapshot.objects.get(pk=snapshot.pk).heartbeat_at
        assert first is not None
        wait_for(
            lambda: present(Snapshot.objects.get(pk=snapshot.pk).heartbeat_at) > first,
            timeout=30,
            interval=0.05,
            message="a second beat",
        )
    last = Snapshot.objects.get(pk=snapshot.pk).heartbeat_at
    time.sleep(0.3)  # six beats' time
    assert Snapshot.objects.get(pk=snapshot.pk).heartbeat_at == last  # the beat stopped with the block


def test_the_embedded_mode_which_has_no_beat_runs_the_reaper_in_a_thread_of_the_web_process(tmp_path):
    """A web process without a broker reaps what a crashed one left running (its beat thread runs the
    schedule, base/embedded_beat.py); with a broker the beat does it, and a command
    (inline tasks) starts no thread."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    show = "import threading; print(any(t.name == 'embedded-beat' for t in threading.enumerate()))"
    base = {key: value for key, value in os.environ.items() if key not in ("CELERY_BROKER_URL", "EMBEDDED_TASKS")}
    base.update(
        DATABASE_URL="postgres://postgres@127.0.0.1:1/never_opened", DJANGO_SETTINGS_MODULE="annotation_site.settings"
    )
    for code, extra, expected in (
        ("import annotation_site.wsgi", {}, "True"),
        ("import annotation_site.wsgi", {"CELERY_BROKER_URL": "redis://127.0.0.1:6379/8"}, "False"),
        ("import django; django.setup()", {}, "False"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", f"{code}; {show}"],
            cwd=REPO_ROOT,
            env={**base, **extra},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.strip().splitlines()[-1] == expected, (code, extra, done.stderr)


def test_the_kinds_name_the_tasks_their_services_queue():
    from annotation_site.celery import app
    from artifacts.services import TAG_TASK
    from modeling.snapshots.services import EXPORT_TASK
    from quality.aggregation_runs import TASK_NAME

    app.loader.import_default_modules()
    from collection.premise_uploads import PREMISE_UPLOAD_TASK
    from importers.services import PAIRS_UPLOAD_TASK
    from model_annotators.services import LABEL_TASK

    restarted = {kind.model._meta.label: kind.task for kind in long_task_kinds() if kind.restarts}
    assert restarted == {
        "modeling.Snapshot": EXPORT_TASK,
        "quality.AggregationRun": TASK_NAME,
        "artifacts.TaggingJob": TAG_TASK,
        "importers.CorpusImport": PAIRS_UPLOAD_TASK,
        "collection.PremiseImport": PREMISE_UPLOAD_TASK,
        "model_annotators.LabellingJob": LABEL_TASK,
    }
    assert all(task in app.tasks for task in restarted.values())
    assert "annotation_site.reap_long_tasks" in app.tasks


def test_the_dashboard_shows_a_restart_beside_the_progress_and_the_failure_message(client, researcher):
    from django.urls import reverse

    restarted = running_snapshot(heartbeat_minutes_ago=0, restarts=1)
    failed = running_snapshot(heartbeat_minutes_ago=10, restarts=2)
    reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: None)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:snapshots")).content.decode()
    row = page[page.index(f'id="snapshot-{restarted.pk}"') :]
    assert "started again 1&times; after its Celery worker stopped" in row[: row.index("</tr>")]
    row = page[page.index(f'id="snapshot-{failed.pk}"') :]
    assert "the process running the export stopped (no heartbeat since" in row[: row.index("</tr>")]
    api = client.get(f"/api/snapshots/{restarted.pk}/").json()
    assert (api["status"], api["restarts"]) == ("running", 1)


# --- an uploaded file's import: restarted from its stored file, then failed with the file removed ---

UPLOADED_TEXT = (
    b"The lighthouse keeper climbed the stairs every evening at dusk.\n\n"
    b"Her sister kept the ledger of every ship that passed the point.\n"
)


def killed_upload_import(restarts=0):
    """A premise upload whose worker took it and then died (SIGKILL: nothing marked it): running,
    silent for ten minutes. tests/importers/test_upload_worker_killed.py kills a real worker."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from base.long_tasks import take
    from collection.models import PremiseImport
    from collection.premise_uploads import queue_premise_upload
    from tests.importers.helpers import ensure_genres

    ensure_genres("fiction")
    run = queue_premise_upload(SimpleUploadedFile("keeper.txt", UPLOADED_TEXT), "fiction", "tales")
    assert take(PremiseImport, run.pk, waiting=("queued",))
    PremiseImport.objects.filter(pk=run.pk).update(heartbeat_at=silent_for(10), restarts=restarts)
    return PremiseImport.objects.get(pk=run.pk)


def test_an_uploaded_import_whose_worker_died_is_started_again_and_imports_once(db, django_capture_on_commit_callbacks):
    from base.uploads import upload_storage
    from corpus.models import Premise

    run = killed_upload_import()

    def run_here(task_name, *args):  # the registered task, in this process (a real worker: see above)
        return task_named(task_name).apply(args=args)

    with django_capture_on_commit_callbacks(execute=True):
        reaped = reap_stale_long_tasks(long_task_kinds(), enqueue=run_here)
    assert reaped == [f"collection.PremiseImport {run.pk} requeued (restart 1 of 2)"]
    run.refresh_from_db()
    assert (run.status, run.restarts, run.kept, run.error) == (ImportStatus.DONE, 1, 2, "")
    assert Premise.objects.filter(dataset__slug="tales").count() == 2  # once
    assert not upload_storage().exists(run.upload)  # removed once done


def test_an_uploaded_import_lost_past_the_bound_is_failed_and_its_file_removed(db, django_capture_on_commit_callbacks):
    from base.uploads import upload_storage

    run = killed_upload_import(restarts=2)
    assert upload_storage().exists(run.upload)
    with django_capture_on_commit_callbacks(execute=True) as queued:
        reaped = reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: pytest.fail(f"queued {args}"))
    assert reaped == [f"collection.PremiseImport {run.pk} failed after 2 restart(s)"]
    assert len(queued) == 1  # the file's removal, after the commit
    run.refresh_from_db()
    assert run.status == ImportStatus.FAILED and "after 2 restart(s): failed. Run the import again" in run.error
    assert not upload_storage().exists(run.upload)


def test_an_import_taken_over_by_its_restart_keeps_nothing_of_the_slow_run(db):
    """A run the reaper thought dead (only slow) must not commit its rows under the restart that
    owns the row now, nor mark the row or remove the file: the restart imports them, once."""
    from base.long_tasks import TakenOver
    from base.uploads import upload_path, upload_storage
    from collection.models import PremiseImport
    from collection.premise_import import import_premises
    from corpus.models import Premise

    slow = killed_upload_import()  # the slow run's row, as it took it
    reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: None)  # thought dead: restarted
    with upload_path(slow.upload) as path, pytest.raises(TakenOver, match="started again by the reaper"):
        import_premises([path], slow.genre, slow.dataset, record=slow)
    assert not Premise.objects.exists()
    row = PremiseImport.objects.get(pk=slow.pk)
    assert (row.status, row.restarts) == ("queued", 1)  # the restart's, waiting for its worker
    assert upload_storage().exists(row.upload)
