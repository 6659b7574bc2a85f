"""The Celery tasks that train on the `gpu` queue (one run, or a pack of runs of one shape), and the
signals that keep a lost Celery worker from leaving a run `running` forever. `run_reporter` picks
the transport; on a GPU node (PLATFORM_URL + NODE_TOKEN) the signals never touch the ORM.
"""

import logging
import socket
from collections.abc import Sequence
from typing import Any

from celery import Task, shared_task
from celery.signals import task_failure, worker_shutting_down

from .remeasure import remeasure_run
from .run_writes import RUN_FINISHED_TASK
from .services import (
    PACKED_TRAINING_TASK,
    REAPER_TASK,
    TRAINING_TASK,
    execute_packed_training_runs,
    execute_training_run,
    fail_running_runs,
    reap_stale_runs,
    record_run_tag_accuracy,
    run_reporter,
)

logger = logging.getLogger(__name__)

# The runs this Celery worker process is training (hostname -> (run ids, task id)), for the shutdown signal.
_current: dict[str, tuple[list[int], str]] = {}


# A GPU node that cannot reach the platform (down, or a bad token) puts the run back on the
# queue instead of consuming it: another node, or this one later, takes it.
PLATFORM_RETRY_SECONDS = 60
PLATFORM_RETRIES = 60


@shared_task(name=TRAINING_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
def run_training(self: Task, run_id: int) -> dict[str, Any]:
    # acks_late + reject_on_worker_lost: if this process dies, the broker hands the message to
    # another Celery worker, whose attempt takes the run over (counted in results["restarts"]).
    from .remote import PlatformError

    hostname = self.request.hostname or f"in-process@{socket.gethostname()}"
    _current[hostname] = ([run_id], self.request.id)
    try:
        return execute_training_run(run_id, hostname=hostname, task_id=self.request.id)
    except PlatformError as error:
        logger.error("run %s: %s; sent back to the queue for %s s", run_id, error, PLATFORM_RETRY_SECONDS)
        raise self.retry(exc=error, countdown=PLATFORM_RETRY_SECONDS, max_retries=PLATFORM_RETRIES) from error
    finally:
        _current.pop(hostname, None)


@shared_task(name=PACKED_TRAINING_TASK, bind=True, acks_late=True, reject_on_worker_lost=True)
def run_packed_training(self: Task, run_ids: list[int]) -> list[dict[str, Any]]:
    """Runs of one model and shape (services.launch_packed_training_runs) trained at once, one
    step for all; each keeps its own lease, heartbeat, checkpoint and results. Their attempt is
    this task's id: a redelivered message takes each of them over as run_training takes its run
    over, and a run whose heartbeat stops is the reaper's, as a lone run is."""
    from .remote import PlatformError

    hostname = self.request.hostname or f"in-process@{socket.gethostname()}"
    _current[hostname] = (list(run_ids), self.request.id)
    try:
        return execute_packed_training_runs(list(run_ids), hostname=hostname, task_id=self.request.id)
    except PlatformError as error:
        logger.error("runs %s: %s; sent back to the queue for %s s", run_ids, error, PLATFORM_RETRY_SECONDS)
        raise self.retry(exc=error, countdown=PLATFORM_RETRY_SECONDS, max_retries=PLATFORM_RETRIES) from error
    finally:
        _current.pop(hostname, None)


@shared_task(name=REAPER_TASK, ignore_result=True)
def reap_training_runs() -> list[int]:
    """Celery beat runs this every REAPER_INTERVAL_SECONDS (settings.CELERY_BEAT_SCHEDULE): a run
    whose node went silent for TRAINING_STALE_MINUTES (a whole Celery worker killed, a node gone) ends
    failed, or is requeued with TRAINING_REAP_REQUEUE, without a human."""
    from django.conf import settings

    reaped = reap_stale_runs(requeue=settings.TRAINING_REAP_REQUEUE)
    if reaped:
        logger.warning(
            "reaper: %s run(s) %s (node lost): %s",
            len(reaped),
            "requeued" if settings.TRAINING_REAP_REQUEUE else "failed",
            reaped,
        )
    return reaped


def _fail_attempt(
    error: str, run_ids: Sequence[int] = (), task_id: str | None = None, hostname: str | None = None
) -> None:
    reporter = run_reporter()
    if hasattr(reporter, "fail_attempt"):
        if task_id:
            for run_id in run_ids:
                reporter.fail_attempt(run_id, task_id, error)
    else:
        fail_running_runs(error, hostname=hostname, task_id=task_id)


@shared_task(name=RUN_FINISHED_TASK)
def run_finished(run_id: int) -> dict[str, int]:
    """A training run is done (default queue): the platform scores a node's checkpoint on the
    snapshot's dev split (remeasure.py), and its accuracy per phenomenon tag goes into its results."""
    remeasure_run(run_id)
    figures = record_run_tag_accuracy(run_id)
    return {"run": run_id, "tagged": figures["tagged"] if figures else 0}


@task_failure.connect
def _fail_run_on_task_failure(
    sender: object = None,
    task_id: str | None = None,
    exception: BaseException | None = None,
    args: Any = None,
    **_: object,
) -> None:
    # execute_training_run records its own errors; this catches what escapes it (time limits,
    # a database or platform that went away mid-write) so the row does not stay `running`.
    name = getattr(sender, "name", None)
    if name in (TRAINING_TASK, PACKED_TRAINING_TASK):
        run_ids = ([args[0]] if name == TRAINING_TASK else list(args[0])) if args else []
        _fail_attempt(f"{type(exception).__name__}: {exception}", run_ids=run_ids, task_id=task_id)


@worker_shutting_down.connect
def _fail_runs_on_cold_shutdown(
    sender: object = None, sig: object = None, how: str | None = None, exitcode: int | None = None, **_: object
) -> None:
    # A warm shutdown lets the running task finish. A cold one kills it; its run is failed now
    # rather than after the reaper's timeout.
    if how == "Cold":
        hostname = str(sender or "")
        try:
            if hostname:
                run_ids, task_id = _current.get(hostname, ([], None))
                _fail_attempt(
                    f"Celery worker {hostname} shut down (cold) during the run",
                    run_ids=run_ids,
                    task_id=task_id,
                    hostname=hostname,
                )
        except Exception:
            logger.exception("could not mark runs of %s failed", hostname)
