"""Loaded into the suite's Celery workers only (`celery worker --include tests.worker_publish_log`,
tests/conftest.py's `start_celery_worker`): the id of every task a worker publishes is pushed onto
a list on its broker, so the test's teardown (`revoke_tasks_left_behind`) revokes those too. A task
the worker queued itself (a finished step queuing the next, a label write queuing a flag refresh)
is never published by the test process, whose `before_task_publish` saw only its own. A task the
test process published inside a test's rolled-back transaction is discarded as it arrives.

Also one task of its own, for the test that shows it: it queues a health check `countdown` seconds
on, from inside the worker, and returns that task's id."""

import os
from typing import Any

import redis
from celery import shared_task
from celery.signals import before_task_publish, task_received, worker_init

PUBLISHED_BY_WORKERS = "tests:published-by-workers"
# The header the test process puts on a task published inside a test's rolled-back transaction
# (tests/conftest.py `_note_published_task`): the worker cannot see that test's rows, so the task is
# discarded as revoked when it arrives, instead of committing what it computed from other rows.
FROM_A_ROLLED_BACK_TEST = "nli_from_a_rolled_back_test"


_client: list[redis.Redis] = []


def _broker() -> redis.Redis:
    if not _client:  # one client for the process (redis-py makes its pool anew after a fork)
        _client.append(redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]))
    return _client[0]


def _note(sender: str | None = None, headers: dict[str, Any] | None = None, **_: Any) -> None:
    task_id = (headers or {}).get("id")
    if task_id:
        _broker().rpush(PUBLISHED_BY_WORKERS, task_id)


def _discard_if_from_a_rolled_back_test(sender: Any = None, request: Any = None, **_: Any) -> None:
    # Received, not yet run or scheduled: the worker checks its revoked ids again before running it.
    if request is not None and request.request_dict.get(FROM_A_ROLLED_BACK_TEST):
        from celery.worker import state

        state.revoked.add(request.id)


def _note_in_this_worker(**_: Any) -> None:
    # Only a worker on the suite's broker notes its publishes: the test process, which imports this
    # module for `take_published`, sees its own through tests/conftest.py's `_note_published_task`.
    if not os.environ.get("CELERY_BROKER_URL"):
        return
    before_task_publish.connect(_note, weak=False, dispatch_uid="tests.worker_publish_log")
    task_received.connect(_discard_if_from_a_rolled_back_test, weak=False, dispatch_uid="tests.rolled_back_tasks")


worker_init.connect(_note_in_this_worker, weak=False, dispatch_uid="tests.worker_publish_log.init")


def take_published(client: redis.Redis) -> list[str]:
    """The ids workers published since the last call, the list emptied in the same step."""
    with client.pipeline(transaction=True) as pipeline:
        pipeline.lrange(PUBLISHED_BY_WORKERS, 0, -1)
        pipeline.delete(PUBLISHED_BY_WORKERS)
        published, _ = pipeline.execute()
    return [task_id.decode() for task_id in published]


@shared_task(name="tests.queue_a_health_check_later")
def queue_a_health_check_later(model: str, pk: int, countdown: float) -> str:
    from base.task_queue import health_check

    return str(health_check.apply_async(args=(model, pk), countdown=countdown).id)
