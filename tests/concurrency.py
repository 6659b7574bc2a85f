"""Calls released together in threads, each on its own database connection: how the concurrency
tests make submits, claims and payers meet on the same rows."""

import threading
from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection


def at_once(calls: Sequence[Callable[..., Any]], *, timeout: float = 120, what: str = "a call") -> list[Any]:
    """Run the calls in threads released together by a barrier; what each returned or raised, in
    order. Fails the test when a thread is still running after `timeout` seconds (`what` hung)."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(index: int, call: Callable[..., Any]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except BaseException as error:  # reported by the test
            results[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(index, call)) for index, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=timeout)
    assert not any(thread.is_alive() for thread in threads), f"{what} hung"
    return results
