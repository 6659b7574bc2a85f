import os

import pytest
from django.db import connection

from annotation_site.celery import enqueue_coalesced, health_check


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
    first = enqueue_coalesced("annotation_site.health_check", "corpus.Dataset", pk, seconds=2)
    Dataset.objects.create(pk=pk, slug="committed-in-the-window", name="late")
    second = enqueue_coalesced("annotation_site.health_check", "corpus.Dataset", pk, seconds=2)
    if celery_worker_process is None:
        assert first.get()["found"] is False and second.get()["found"] is True
        return
    assert second is None
    assert first.get(timeout=30)["found"] is True
    # The window has passed: the next call queues a run of its own.
    third = enqueue_coalesced("annotation_site.health_check", "corpus.Dataset", pk, seconds=0.1)
    assert third is not None and third.get(timeout=30)["found"] is True
