"""Long tasks that survive a killed process: a heartbeat on the row while the work runs, and one
reaper that requeues (a bounded number of times) or fails the rows whose heartbeat stopped.

A long task is any work with a status row a researcher watches: a snapshot export, an
aggregation run, a tagging job, a monitor refresh, an import. While it works, `heartbeat(...)`
stamps the row's `heartbeat_at` from a thread of its own every LONG_TASK_HEARTBEAT_SECONDS, so the
beat does not depend on how often the work reports progress (one long query is no silence). A
process killed with SIGKILL takes the thread with it and the beat stops. The reaper
(`reap_stale_long_tasks`, run by Celery beat every LONG_TASK_REAPER_SECONDS, and by the embedded
mode's beat thread, base/embedded_beat.py) finds `running` rows silent for
LONG_TASK_STALE_SECONDS and either puts the row back and queues its task again (kinds that can
restart from scratch, up to LONG_TASK_MAX_RESTARTS times) or marks it failed with a message
that says what happened and what to do.

Without that, a Celery worker killed mid-export left the snapshot `running` until the broker's
visibility timeout (6 h) redelivered the message. Training runs keep their own
heartbeats and reaper (modeling.training: node leases, attempts, GPU nodes on other machines).

This module names no app: the composition root lists the kinds (annotation_site.wiring.long_task_kinds).
"""

import functools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import DateTimeField, Model, PositiveSmallIntegerField, Q, TextChoices, TextField
from django.utils import timezone

logger = logging.getLogger(__name__)


class JobStatus(TextChoices):
    """Where a long task stands: the one status of snapshot exports, aggregation runs, tagging jobs
    and monitor refreshes. `pending` (exports, aggregation runs) and `queued` (tagging jobs) both
    wait for a worker, as they were stored. The imports' `ImportStatus` has the same values but
    `pending`; every kind shares `running` and `failed`, which the reaper reads."""

    PENDING = "pending", "pending"
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class LongTask(Model):
    """The fields of every long task's row (abstract): why it failed, when it finished, and what
    the reaper reads and writes (`heartbeat_at`, stamped by `heartbeat`; `restarts`, counted by
    `reap_stale_long_tasks`). Its status field is the kind's own (its choices and default)."""

    error = TextField(blank=True)
    finished_at = DateTimeField(null=True, blank=True)
    heartbeat_at = DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the process running it (base/long_tasks.py)."
    )
    restarts = PositiveSmallIntegerField(default=0, help_text="Times started again after its process died.")

    class Meta:
        abstract = True


# A row running without a heartbeat (its process died before the first beat) is taken over once it
# has run longer than any real export or fit takes (bench/export.py: a MultiNLI export is under a minute).
STALE_RUNNING_AFTER = timedelta(hours=1)


@dataclass(frozen=True)
class LongTaskKind:
    """One kind of long task: its row's model and what the reaper does with a lost one.

    `task`: the Celery task that runs it, called with the row's pk; with `requeue_status`, a lost
    row is put back in that status and the task queued again (the task must start over from
    scratch, idempotently). Without them a lost row is failed. `started_field`: when the work
    started, for rows that never got a heartbeat. `lost`: what was lost, for the message
    ("the export", "the import"); `again`: what the researcher can do about it.
    """

    model: type[Model]
    lost: str
    again: str
    task: str | None = None
    requeue_status: str | None = None
    started_field: str = "started_at"
    # Rows of a kind that restarts but only some of whose rows can (an import restarts when its
    # file is in storage, not when it ran in a command's process): restarted where this says so.
    restartable: Callable[[Any], bool] | None = None
    # What a row failed for good leaves behind (an upload's stored file), cleared after the commit.
    after_failure: Callable[[Any], None] | None = None

    @property
    def restarts(self) -> bool:
        return bool(self.task and self.requeue_status)

    def restarts_row(self, row: Any) -> bool:
        return self.restarts and (self.restartable is None or self.restartable(row))


def _beat_until(model: type[Model], pk: Any, seconds: float, stop: threading.Event) -> None:
    try:
        while not stop.wait(seconds):
            try:
                model._default_manager.filter(pk=pk, status=JobStatus.RUNNING).update(heartbeat_at=timezone.now())
            except DatabaseError as error:  # a missed beat is not a reason to stop the work
                logger.warning("heartbeat of %s %s not written: %s", model._meta.label, pk, error)
    finally:
        connection.close()  # this thread's own connection


@contextmanager
def heartbeat(model: type[Model], pk: Any, *, seconds: float | None = None) -> Iterator[None]:
    """Stamp the row's heartbeat now and, from a thread, every `seconds` while the block runs.

    Inside a transaction already open (a caller's, a test's) only the first stamp is written: the
    thread's own connection could wait on that transaction's row lock until it ends."""
    seconds = float(settings.LONG_TASK_HEARTBEAT_SECONDS) if seconds is None else seconds
    model._default_manager.filter(pk=pk).update(heartbeat_at=timezone.now())
    if seconds <= 0 or connection.in_atomic_block:
        yield
        return
    stop = threading.Event()
    beater = threading.Thread(
        target=_beat_until, args=(model, pk, seconds, stop), name=f"heartbeat-{model._meta.label}-{pk}", daemon=True
    )
    beater.start()
    try:
        yield
    finally:
        stop.set()
        beater.join(timeout=seconds + 10)


def take(
    model: type[Model], pk: Any, *, waiting: Sequence[str] = (JobStatus.PENDING, JobStatus.FAILED), **fields: Any
) -> bool:
    """Move the row from a `waiting` status (pending/failed) -> running in one UPDATE, so two
    deliveries of one task never both run (Celery redelivers with acks_late); a row left running by
    a process that died is taken over once its heartbeat is stale, or, without one, after
    STALE_RUNNING_AFTER. `fields`: more to set in the same UPDATE. False: the row was not takeable
    (done, or running and alive)."""
    now = timezone.now()
    if any(field.name == "progress" for field in model._meta.concrete_fields):
        fields = {"progress": 0.0, **fields}
    takeable = (
        Q(status__in=list(waiting))
        | Q(status=JobStatus.RUNNING, heartbeat_at__lt=now - timedelta(seconds=settings.LONG_TASK_STALE_SECONDS))
        | Q(status=JobStatus.RUNNING, heartbeat_at__isnull=True, started_at__lt=now - STALE_RUNNING_AFTER)
    )
    return bool(
        model._default_manager.filter(takeable, pk=pk).update(
            status=JobStatus.RUNNING, started_at=now, heartbeat_at=now, finished_at=None, error="", **fields
        )
    )


class TakenOver(Exception):
    """The row was started again by the reaper while this run still worked (it was thought dead)."""


def hold_as_taken(model: type[Model], pk: Any, restarts: int) -> None:
    """At the end of a run's own transaction (an all-or-nothing import): lock the row and make sure
    it is still this run's (running, not restarted since it was taken), so the run's rows commit
    only if no restart will write them again. Raises TakenOver, which rolls the run back."""
    still_ours = model._default_manager.select_for_update().filter(pk=pk, status=JobStatus.RUNNING, restarts=restarts)
    if not list(still_ours.values_list("pk", flat=True)):
        raise TakenOver(
            f"{model._meta.verbose_name} {pk} was started again by the reaper while this run worked; "
            "nothing of this run was kept (the restart imports it)"
        )


def _stale(kind: LongTaskKind, cutoff: Any) -> Q:
    return Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, **{f"{kind.started_field}__lt": cutoff})


def reap_stale_long_tasks(
    kinds: Sequence[LongTaskKind],
    *,
    stale: float | None = None,
    restarts: int | None = None,
    enqueue: Callable[..., Any] | None = None,
) -> list[str]:
    """Requeue or fail the `running` rows of `kinds` silent for `stale` seconds; returns what it did,
    one line a row ("modeling.Snapshot 12 requeued (restart 1 of 2)")."""
    if enqueue is None:
        from base.task_queue import enqueue as queue_task

        enqueue = queue_task
    stale = float(settings.LONG_TASK_STALE_SECONDS) if stale is None else stale
    restarts = int(settings.LONG_TASK_MAX_RESTARTS) if restarts is None else restarts
    now = timezone.now()
    cutoff = now - timedelta(seconds=stale)
    done: list[str] = []
    for kind in kinds:
        with transaction.atomic():
            rows = kind.model._default_manager.select_for_update(skip_locked=True).filter(
                _stale(kind, cutoff), status=JobStatus.RUNNING
            )
            for row in rows:
                done.append(_reap(row, kind, now, restarts, enqueue))
    if done:
        logger.warning("long-task reaper: %s", "; ".join(done))
    return done


def _reap(row: Any, kind: LongTaskKind, now: Any, restarts: int, enqueue: Callable[..., Any]) -> str:
    last = row.heartbeat_at or getattr(row, kind.started_field, None)
    when = f"{last:%Y-%m-%d %H:%M:%S} UTC" if last else "its start"
    lost = f"the process running {kind.lost} stopped (no heartbeat since {when})"
    label = f"{kind.model._meta.label} {row.pk}"
    # Compare and set: a row whose task beat or finished since it was read is left alone.
    unchanged = kind.model._default_manager.filter(
        pk=row.pk, status=JobStatus.RUNNING, restarts=row.restarts, heartbeat_at=row.heartbeat_at
    )
    if kind.restarts_row(row) and row.restarts < restarts:
        restart = row.restarts + 1
        if not unchanged.update(
            restarts=restart,
            status=kind.requeue_status,
            heartbeat_at=None,
            error=f"{lost}; started again from scratch (restart {restart} of {restarts})",
        ):
            return f"{label} left alone (it changed meanwhile)"
        transaction.on_commit(functools.partial(enqueue, kind.task, row.pk))
        return f"{label} requeued (restart {restart} of {restarts})"
    tried = f" after {row.restarts} restart(s)" if row.restarts else ""
    if not unchanged.update(status=JobStatus.FAILED, error=f"{lost}{tried}: failed. {kind.again}", finished_at=now):
        return f"{label} left alone (it changed meanwhile)"
    if kind.after_failure is not None:
        transaction.on_commit(functools.partial(kind.after_failure, row))
    return f"{label} failed{tried}"
