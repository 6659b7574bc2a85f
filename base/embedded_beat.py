"""The embedded mode's beat: the periodic work of `settings.CELERY_BEAT_SCHEDULE`, run by a daemon
thread of the web process when there is no broker (and so no `celery beat`).

With a broker, `celery -A annotation_site beat` runs the schedule. Without one nothing did, but
the long-task reaper: a closing adversarial round stayed closing for good under `make demo`, the
hourly tagging sweep never ran and the tallies' deltas were folded only now and then by a
writer's commit. There is one schedule for both modes: this thread reads the beat's own entries
(no second list), and runs each task at its entry's interval by its registered name, eagerly in
this thread, as a Celery worker with concurrency 1 would. Tasks such a run queues in turn go to
the embedded mode's background thread (`base.task_queue.enqueue`), so an export the round
advance requests does not hold up the next entry for long.

An entry's first run is one interval after the thread starts (as celery beat runs a new entry).
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from django.db import connections

from base.task_queue import task_named

logger = logging.getLogger(__name__)


def interval_seconds(name: str, entry: Mapping[str, Any]) -> float:
    """The entry's interval in seconds: the project's entries are numbers (or a timedelta); any other
    kind of schedule (crontab) is refused by name, since this thread would not know when it is due."""
    every = entry["schedule"]
    if isinstance(every, timedelta):
        every = every.total_seconds()
    if isinstance(every, bool) or not isinstance(every, int | float) or every <= 0:
        raise ValueError(f"Beat entry {name!r}: the embedded mode runs intervals in seconds, not {every!r}.")
    return float(every)


def run_entry(name: str, entry: Mapping[str, Any]) -> bool:
    """Run the entry's task now, in this thread; True when it finished without an error (logged)."""
    try:
        result = task_named(entry["task"]).apply(args=entry.get("args", ()), kwargs=entry.get("kwargs", {}))
        if result.failed():
            logger.error("embedded beat: %s (%s) failed: %r", name, entry["task"], result.result)
            return False
        return True
    except Exception:
        logger.exception("embedded beat: %s (%s)", name, entry["task"])
        return False
    finally:
        connections.close_all()  # this thread's connections would otherwise outlive the run


class EmbeddedBeat:
    """The schedule's entries with when each is next due; `run_due` runs those due, `start` loops it."""

    def __init__(
        self,
        schedule: Mapping[str, Mapping[str, Any]],
        *,
        clock: Callable[[], float] = time.monotonic,
        run: Callable[[str, Mapping[str, Any]], bool] = run_entry,
    ) -> None:
        self.entries = {name: dict(entry) for name, entry in schedule.items()}
        self.every = {name: interval_seconds(name, entry) for name, entry in self.entries.items()}
        self.clock, self.run = clock, run
        started = clock()
        self.due = {name: started + every for name, every in self.every.items()}
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def run_due(self) -> list[str]:
        """Run every entry due now, in the schedule's order; returns their names."""
        ran = []
        for name, entry in self.entries.items():
            if self.stopped.is_set():
                break
            if self.due[name] <= self.clock():
                self.run(name, entry)
                # From the end of the run: a run longer than its interval is not started again at once.
                self.due[name] = self.clock() + self.every[name]
                ran.append(name)
        return ran

    def seconds_to_next(self) -> float:
        return max(0.0, min(self.due.values(), default=60.0) - self.clock())

    def loop(self) -> None:
        while not self.stopped.wait(self.seconds_to_next()):
            self.run_due()

    def start(self) -> None:
        self.thread = threading.Thread(target=self.loop, name="embedded-beat", daemon=True)
        self.thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join(timeout)


_started: EmbeddedBeat | None = None
_started_lock = threading.Lock()


def start_embedded_beat(schedule: Mapping[str, Mapping[str, Any]] | None = None) -> EmbeddedBeat | None:
    """Start this process's embedded beat on `schedule` (the settings' CELERY_BEAT_SCHEDULE when
    None); once a process: None when one runs already."""
    global _started
    if schedule is None:
        from django.conf import settings

        schedule = settings.CELERY_BEAT_SCHEDULE
    with _started_lock:
        if _started is not None:
            return None
        _started = EmbeddedBeat(schedule)
        _started.start()
        return _started
