"""Queueing tasks by name, for every app: a Celery worker with a broker, an in-process thread
without one (the embedded mode). The app is Celery's current app, the one the composition
root configures (annotation_site/celery.py), so this module imports nothing above the base."""

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import current_app as app
from celery import shared_task

_background = None
_background_lock = threading.Lock()
_pending = 0  # jobs submitted to the background thread and not finished yet


def _run_in_background(task: Any, args: tuple[Any, ...], task_id: str | None) -> Any:
    """The embedded mode's stand-in for a Celery worker: one thread, jobs one after another, like a
    Celery worker with concurrency 1, so a request never waits for an export or a training run."""
    global _background, _pending
    with _background_lock:
        if _background is None:
            _background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embedded-tasks")
        _pending += 1
        return _background.submit(_apply_and_close, task, args, task_id)


def _apply_and_close(task: Any, args: tuple[Any, ...], task_id: str | None) -> Any:
    global _pending
    from django.db import connections

    try:
        return task.apply(args=args, task_id=task_id)
    finally:
        connections.close_all()  # this thread's connections would otherwise outlive the job
        with _background_lock:
            _pending -= 1


_lookup_lock = threading.Lock()


def task_named(task_name: str) -> Any:
    """The registered task `task_name`, importing the task modules on first use. One thread at a
    time imports them: threads of a fresh web process that looked at once used to find the
    registry half filled and answer 500 ("never registered") after their request's data was saved."""
    task = app.tasks.get(task_name)
    if task is None:
        with _lookup_lock:
            if task_name not in app.tasks:
                app.loader.import_default_modules()
            task = app.tasks.get(task_name)
    if task is None:
        raise LookupError(f"No Celery task is registered as {task_name!r}.")
    return task


def load_for_enqueue() -> None:
    """Import now what a process's first `enqueue` imports: the task modules and, with a broker,
    its client library (redis; no connection is opened, so a server may call this before it
    forks). A web server calls it at start (annotation_site.wiring)."""
    from celery.app.backends import by_url
    from django.conf import settings

    with _lookup_lock:
        app.loader.import_default_modules()
    app.finalize(auto=True)  # binds every task to the app
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        app.amqp.router  # noqa: B018 (celery.app.amqp and its routes, imported on first use)
        with app.connection_for_write() as connection:
            connection.transport  # noqa: B018 (the transport's modules; the socket opens on first use)
        by_url(app.conf.result_backend, app.loader)  # the result backend's class, imported, not made


def enqueue(task_name: str, *args: Any, task_id: str | None = None) -> Any:
    """Queue a task by its registered name.

    With a broker it goes to the Celery workers. Without one (the embedded mode) it runs in this
    process: in a background thread (settings.EMBEDDED_TASKS = "background", the default, so
    pages answer at once) or inline ("inline": commands and tests that want the result now).
    Services queue their tasks through this instead of importing the task modules, which
    import the services: the arrow goes one way. A web process has not imported the task
    modules yet; the first call imports them as a Celery worker does when it starts.
    """
    from django.conf import settings

    task = task_named(task_name)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # The mode is Django's setting, read now: Celery's own copy is taken once, when its conf is
        # first read, and a process (a test session) that changes the setting later must not
        # send the task to a broker.
        if settings.EMBEDDED_TASKS == "background":
            return _run_in_background(task, args, task_id)
        return task.apply(args=args, task_id=task_id)
    return task.apply_async(args=args, task_id=task_id)


_coalesced_lock = threading.Lock()
_coalesced_runs: dict[tuple[Any, ...], float] = {}  # (task, args) -> when this process's queued run starts
# A run queued this long ahead still covers a call: the worker's clock may be a little behind ours.
COALESCE_MARGIN_SECONDS = 1.0


def enqueue_coalesced(task_name: str, *args: Any, seconds: float) -> Any:
    """Queue the task to run `seconds` from now, unless this process has already queued the same
    task and arguments to start later than now (by COALESCE_MARGIN_SECONDS): that run covers this call.

    For a task that does whatever is left to do when it runs ("tag the dataset's untagged pairs"),
    called after the caller's commit: the queued run starts after the commit, so it sees the rows.
    A burst of calls costs one message a window per web process instead of one a call (publishing on
    every writing submit was a tenth of the submit's time). Without a broker the task runs now as
    `enqueue` runs it: an eager run has no later start to cover anything with.
    """
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER:
        return enqueue(task_name, *args)
    key = (task_name, *args)
    now = time.monotonic()
    with _coalesced_lock:
        if _coalesced_runs.get(key, 0.0) > now + COALESCE_MARGIN_SECONDS:
            return None
        _coalesced_runs[key] = now + seconds
    return task_named(task_name).apply_async(args=args, countdown=seconds)


def wait_for_background_tasks(timeout: float | None = None) -> None:
    """Block until the embedded mode's queued jobs are done (for commands and tests), the jobs they
    queue in turn included (a finished training run queues its tag accuracy after the wait began)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _background_lock:
            executor, pending = _background, _pending
        if executor is None or pending <= 0:
            return
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        executor.submit(lambda: None).result(timeout=left)


@shared_task(name="base.health_check")
def health_check(model_label: str, pk: Any) -> dict[str, Any]:
    """What a Celery worker sees: its database, and whether the row `model_label` #pk is there (for tests and ops).

    The model is named by its label ("app.Model") so that the base layer imports no app.
    """
    import socket

    from django.apps import apps
    from django.db import connection

    model = apps.get_model(model_label)
    return {
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "database": connection.vendor,
        "database_name": connection.settings_dict["NAME"],
        "found": model.objects.filter(pk=pk).exists(),
    }
