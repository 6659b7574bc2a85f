"""Submits in flight together (PostgreSQL: real row locks, a connection per thread): the test holds
the contested row's lock, starts every submit, waits until each is queued on a lock, then lets them go."""

import threading
from collections.abc import Callable
from typing import Any

from django.db import connection, connections, transaction

from tests.conftest import wait_for


def waiting_on_locks():
    """How many of this database's connections wait on a lock now."""
    with connection.cursor() as cursor:
        # Inside a transaction PostgreSQL keeps the first statistics snapshot: take a fresh one.
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        return cursor.fetchone()[0]


def submit_at_once(hold: Callable[[], Any], submits: list[Callable[[], Any]], *, what: str) -> list[Any]:
    """Run `submits` in threads while `hold()` (a SELECT ... FOR UPDATE of the contested row) holds
    its lock, once every one of them waits on it; each one's return value, or the exception it raised."""
    outcomes: list[Any] = [None] * len(submits)

    def run(index, submit):
        try:
            outcomes[index] = submit()
        except Exception as error:  # the caller's assertions say which were expected
            outcomes[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(index, submit)) for index, submit in enumerate(submits)]
    with transaction.atomic():
        hold()
        for thread in threads:
            thread.start()
        wait_for(
            lambda: waiting_on_locks() >= len(threads) or not all(thread.is_alive() for thread in threads),
            timeout=180,
            message=f"every submit waiting on {what}",
        )
        assert all(thread.is_alive() for thread in threads), f"a submit did not wait on {what}: {outcomes}"
    for thread in threads:
        thread.join(timeout=180)
    assert not any(thread.is_alive() for thread in threads), "a submit hung"
    return outcomes
