"""A pytest plugin that runs mutmut's mutants one after another by name in one test session
(`scripts/mutate_changed.py --by-name`), instead of a session per mutant.

mutmut starts a pytest process per mutant and stops it after a time limit; on a loaded machine that
limit is reached at the first mutant, and each later session (which then makes the test database
anew) reaches it too. Here the database, the Celery worker and the other session-wide fixtures are
made once; each mutant is switched on by name (`MUTANT_UNDER_TEST`, which mutmut's trampolines read
at every call), runs the tests the plan gives it until one fails, and every fixture narrower than
the session is torn down before the next mutant, so no mutant's state reaches another. A test that
failed under a mutant is run again with no mutant: only if it then passes is the mutant killed;
otherwise the verdict is "suspect" (the failure was not the mutation's). Before the first mutant,
its first test runs once with no mutant, outside any mutant's time limit: the session's fixtures
(making the test database, minutes on a loaded machine) are made there, and a test that fails
without a mutant stops the run before it decides anything.

Code that runs in a process started before a mutant was switched on (the session's Celery worker)
runs unmutated: a mutant only such a process reaches survives here, and needs mutmut's own run.

The plan (a JSON file named by MUTANTS_BY_NAME_PLAN): {"mutants": {name: [test node ids] or null
for every collected test}, "mutant_seconds": limit}. The verdicts go to MUTANTS_BY_NAME_RESULTS,
rewritten after each mutant so a stopped run keeps what it decided.
"""

import json
import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import pytest
from _pytest.runner import runtestprotocol

PLAN = "MUTANTS_BY_NAME_PLAN"
RESULTS = "MUTANTS_BY_NAME_RESULTS"


class MutantTimedOut(BaseException):
    """Raised in the test that was running when a mutant's time ran out (a BaseException, so that
    the code under test cannot swallow it in an `except Exception`)."""


class BetweenMutants(pytest.Item):
    """A point directly under the session: tearing down to it ends every module, class and
    function fixture and keeps the session's."""

    def runtest(self) -> None:
        raise AssertionError("never run: only torn down to")


def switch_on(name: str) -> None:
    # "" names no mutant: every trampoline calls the original function.
    os.environ["MUTANT_UNDER_TEST"] = name


@contextmanager
def time_limit(seconds: float) -> Iterator[list[bool]]:
    """Raise MutantTimedOut in the main thread after `seconds`; the yielded list says whether it fired."""
    fired: list[bool] = []

    def expire(signum: int, frame: FrameType | None) -> None:
        fired.append(True)
        raise MutantTimedOut(f"the mutant ran past {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def failed(reports: list[pytest.TestReport]) -> bool:
    return any(report.failed for report in reports)


def run_mutant(
    session: pytest.Session, name: str, tests: list[pytest.Item], point: BetweenMutants, seconds: float
) -> dict[str, object]:
    """One mutant's verdict: killed (with the test that failed under it and passes without it),
    survived, timeout, suspect (its failing test fails without the mutant too) or no tests."""
    if not tests:
        return {"status": "no tests", "test": None}
    started = time.monotonic()
    failing: pytest.Item | None = None
    switch_on(name)
    with time_limit(seconds) as fired:
        try:
            for index, item in enumerate(tests):
                following = tests[index + 1] if index + 1 < len(tests) else point
                if failed(runtestprotocol(item, nextitem=following, log=False)):
                    failing = item
                    break
        except MutantTimedOut:
            fired.append(True)
    switch_on("")
    # Stopped early (a failure, the time limit): what the tests after it would have shared goes too.
    session._setupstate.teardown_exact(point)
    verdict: dict[str, object] = {"seconds": round(time.monotonic() - started, 1)}
    if fired:
        return {**verdict, "status": "timeout", "test": failing.nodeid if failing else None}
    if failing is None:
        return {**verdict, "status": "survived", "test": None}
    passes_without = not failed(runtestprotocol(failing, nextitem=point, log=False))
    return {**verdict, "status": "killed" if passes_without else "suspect", "test": failing.nodeid}


def planned(session: pytest.Session, by_id: dict[str, pytest.Item], ids: list[str] | None) -> list[pytest.Item]:
    return list(session.items) if ids is None else [by_id[i] for i in ids if i in by_id]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool:
    plan = json.loads(Path(os.environ[PLAN]).read_text(encoding="utf-8"))
    out = Path(os.environ[RESULTS])
    seconds = float(plan.get("mutant_seconds", 300))
    by_id = {item.nodeid: item for item in session.items}
    point = BetweenMutants.from_parent(session, name="between-mutants")
    verdicts: dict[str, dict[str, object]] = {}
    first = next((tests for ids in plan["mutants"].values() if (tests := planned(session, by_id, ids))), [])
    if first and failed(runtestprotocol(first[0], nextitem=point, log=False)):
        # Without a mutant every verdict would be "suspect": say why once, decide nothing.
        out.write_text(json.dumps(verdicts), encoding="utf-8")
        print(f"{first[0].nodeid} fails without any mutant: no mutant decided", flush=True)
        return True
    for name, ids in plan["mutants"].items():
        tests = planned(session, by_id, ids)
        verdicts[name] = run_mutant(session, name, tests, point, seconds)
        out.write_text(json.dumps(verdicts, indent=1), encoding="utf-8")
        print(f"{name}: {verdicts[name]['status']}", flush=True)
    return True
