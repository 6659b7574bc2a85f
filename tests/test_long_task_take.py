"""`long_tasks.take` on a row already running: a redelivered task must not start
a second run of a row whose heartbeat is fresh, nor of a row that has no heartbeat yet but started a
moment ago; it takes over a row whose heartbeat went stale, or one silent since its start for
STALE_RUNNING_AFTER. Until now it was tested on pending rows only."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from annotation_site.wiring import long_task_kinds
from base.long_tasks import (
    STALE_RUNNING_AFTER,
    JobStatus,
    TakenOver,
    hold_as_taken,
    reap_stale_long_tasks,
    take,
)
from modeling.models import Snapshot
from modeling.snapshots.services import create_snapshot
from tests.present import present

pytestmark = pytest.mark.django_db


def running(*, started_ago, heartbeat_ago=None):
    snapshot = create_snapshot(None)
    now = timezone.now()
    Snapshot.objects.filter(pk=snapshot.pk).update(
        status=JobStatus.RUNNING,
        started_at=now - started_ago,
        heartbeat_at=None if heartbeat_ago is None else now - heartbeat_ago,
    )
    return snapshot.pk


STALE = timedelta(seconds=settings.LONG_TASK_STALE_SECONDS)


def test_a_running_row_with_a_fresh_heartbeat_is_not_taken_twice():
    pk = running(started_ago=STALE * 3, heartbeat_ago=STALE / 4)
    before = Snapshot.objects.get(pk=pk)
    assert take(Snapshot, pk) is False
    after = Snapshot.objects.get(pk=pk)
    assert (after.status, after.started_at, after.heartbeat_at) == (
        JobStatus.RUNNING,
        before.started_at,
        before.heartbeat_at,
    )


def test_a_running_row_without_a_heartbeat_is_not_taken_at_once():
    pk = running(started_ago=timedelta(seconds=5))
    assert take(Snapshot, pk) is False
    assert take(Snapshot, running(started_ago=STALE_RUNNING_AFTER - timedelta(minutes=5))) is False


def test_a_running_row_whose_heartbeat_went_stale_is_taken_over():
    pk = running(started_ago=STALE * 3, heartbeat_ago=STALE * 2)
    assert take(Snapshot, pk) is True
    row = Snapshot.objects.get(pk=pk)
    assert row.status == JobStatus.RUNNING and timezone.now() - present(row.heartbeat_at) < STALE / 4


def test_a_running_row_silent_since_its_start_is_taken_over_after_the_bound():
    assert take(Snapshot, running(started_ago=STALE_RUNNING_AFTER + timedelta(minutes=5))) is True


def test_a_done_row_is_never_taken():
    pk = create_snapshot(None).pk
    Snapshot.objects.filter(pk=pk).update(status=JobStatus.DONE, heartbeat_at=timezone.now() - STALE * 10)
    assert take(Snapshot, pk) is False


def test_a_slow_run_whose_row_its_restart_took_again_keeps_nothing():
    """The reaper thought the run dead and requeued it; the restart took the row (running again,
    with a fresh heartbeat). The slow run must not commit over it: the restart count tells them apart."""
    pk = running(started_ago=STALE * 3, heartbeat_ago=STALE * 2)
    assert reap_stale_long_tasks(long_task_kinds(), enqueue=lambda *args: None) == [
        f"modeling.Snapshot {pk} requeued (restart 1 of 2)"
    ]
    assert take(Snapshot, pk) is True  # the restart's delivery
    with pytest.raises(TakenOver, match="started again by the reaper"):
        hold_as_taken(Snapshot, pk, restarts=0)  # the slow run, taken before the restart
    hold_as_taken(Snapshot, pk, restarts=1)  # the restart's own run goes on
