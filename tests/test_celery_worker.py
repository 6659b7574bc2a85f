import os

import pytest
from django.db import connection

from base.task_queue import enqueue_coalesced, health_check


@pytest.mark.celery_worker
def test_worker_reads_back_the_row_the_test_just_wrote(transactional_db, celery_worker_process):
    from corpus.models import Dataset

    dataset = Dataset.objects.create(slug="seen-by-worker", name="seen")
    result = health_check.delay("corpus.Dataset", dataset.pk)
    answer = result.get(timeout=30)
    assert answer["database"] == connection.vendor
    assert answer["database_name"] == connection.settings_dict["NAME"]
    assert answer["found"] is True
    # A row that is not there is not seen: the answer depends on the database, not on a constant.
    assert health_check.delay("corpus.Dataset", dataset.pk + 1000).get(timeout=30)["found"] is False
    if celery_worker_process is not None:
        # A real worker process ran it, not this one: another pid, and its log names the task.
        assert answer["pid"] != os.getpid()
        assert celery_worker_process.poll() is None
        assert result.id in celery_worker_process.log_path.read_text()


@pytest.mark.celery_worker
def test_a_coalesced_task_queued_in_a_window_runs_after_it_and_sees_what_was_committed_meanwhile(
    transactional_db, celery_worker_process
):
    """`enqueue_coalesced`: the first call queues the run to start a window later, a call inside the
    window queues nothing (the run covers it), and the run sees a row committed after the first call.
    Without a broker every call runs now (an eager run has no later start to cover anything with)."""
    from corpus.models import Dataset

    pk = Dataset.objects.create(slug="coalesced-probe", name="probe").pk + 1000
    first = enqueue_coalesced("base.health_check", "corpus.Dataset", pk, seconds=2)
    Dataset.objects.create(pk=pk, slug="committed-in-the-window", name="late")
    second = enqueue_coalesced("base.health_check", "corpus.Dataset", pk, seconds=2)
    if celery_worker_process is None:
        assert first.get()["found"] is False and second.get()["found"] is True
        return
    assert second is None
    assert first.get(timeout=30)["found"] is True
    # The window has passed: the next call queues a run of its own.
    third = enqueue_coalesced("base.health_check", "corpus.Dataset", pk, seconds=0.1)
    assert third is not None and third.get(timeout=30)["found"] is True


@pytest.mark.celery_worker
def test_a_worker_exports_with_the_files_the_composition_root_registered(
    transactional_db, celery_worker_process, make_worker
):
    """The worker's process registered the task apps at start (annotation_site.apps.SiteConfig,
    annotation_site.wiring.register), as every process does: its snapshot of an MPE dataset holds
    validation's premise_labels.tsv, which modeling's export knows only through that registration
    (without it the export fails: modeling.snapshots.extra_files)."""
    from base.long_tasks import JobStatus
    from corpus.models import Label
    from modeling.models import Snapshot
    from modeling.snapshots.services import request_snapshot
    from tests.conftest import wait_for
    from tests.validation.premise_helpers import make_items
    from validation import premise_labels
    from validation.models import PremisePair
    from validation.snapshot_files import PREMISE_LABELS_FILE

    dataset, items = make_items(1, golds=[Label.ENTAILMENT.value])
    for worker in [make_worker() for _ in range(3)]:
        for premise_pair in PremisePair.objects.filter(item__in=items):
            premise_labels.add_premise_labels(worker, {premise_pair.pk: Label.NEUTRAL.value})
    snapshot_id = request_snapshot(None, datasets=[dataset.slug]).pk

    def finished():
        snapshot = Snapshot.objects.get(pk=snapshot_id)
        return snapshot if snapshot.status in (JobStatus.DONE, JobStatus.FAILED) else None

    snapshot = wait_for(finished, timeout=60, message="the snapshot export to finish")
    assert snapshot.status == JobStatus.DONE, snapshot.error
    assert PREMISE_LABELS_FILE in {f.name for f in snapshot.files.all()}
    if celery_worker_process is not None:
        assert "Task modeling.tasks.export_snapshot_task[" in celery_worker_process.log_path.read_text()


@pytest.mark.celery_worker
def test_a_task_a_test_leaves_waiting_is_revoked_when_the_test_ends(transactional_db, celery_worker_process):
    """A task queued to run after the test (a countdown the test does not wait out) must not run in
    the next test on the same database: the suite's teardown revokes it, and the worker discards it
    when its time comes instead of running it."""
    from celery.exceptions import TaskRevokedError

    from corpus.models import Dataset
    from tests.conftest import needs_broker, revoke_tasks_left_behind

    needs_broker()
    dataset = Dataset.objects.create(slug="left-behind", name="left")
    waiting = health_check.apply_async(args=("corpus.Dataset", dataset.pk), countdown=2)
    revoke_tasks_left_behind()
    with pytest.raises(TaskRevokedError):
        waiting.get(timeout=30)
    # A task queued after the revocation runs as usual: only what was left behind is revoked.
    assert health_check.delay("corpus.Dataset", dataset.pk).get(timeout=30)["found"] is True


@pytest.mark.celery_worker
def test_a_task_the_worker_queued_itself_is_revoked_when_the_test_ends(transactional_db, celery_worker_process):
    """A task the worker published itself (a step queuing the next) never passed through this
    process's publish signal: the workers note theirs on the broker (tests/worker_publish_log.py),
    and the teardown revokes those too."""
    from celery.exceptions import TaskRevokedError

    from annotation_site.celery import app
    from corpus.models import Dataset
    from tests.conftest import needs_broker, revoke_tasks_left_behind

    needs_broker()
    dataset = Dataset.objects.create(slug="queued-by-the-worker", name="queued")
    queued = app.send_task("tests.queue_a_health_check_later", args=("corpus.Dataset", dataset.pk, 2))
    waiting = app.AsyncResult(queued.get(timeout=30))
    revoke_tasks_left_behind()
    with pytest.raises(TaskRevokedError):
        waiting.get(timeout=30)


@pytest.mark.celery_worker
@pytest.mark.django_db
def test_a_task_published_inside_a_rolled_back_test_never_runs_in_the_suites_worker(celery_worker_process):
    """The worker cannot see a `db` test's rows (one transaction, rolled back at its end): what it
    computed would be from the rows other tests committed, and would stay committed after the test.
    So the suite's worker discards such a task as revoked when it arrives."""
    from celery.exceptions import TaskRevokedError

    from tests.conftest import needs_broker

    needs_broker()
    published = health_check.delay("corpus.Dataset", 1)
    with pytest.raises(TaskRevokedError):
        published.get(timeout=30)
    assert f"Discarding revoked task: base.health_check[{published.id}]" in celery_worker_process.log_path.read_text()
