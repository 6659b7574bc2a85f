"""One pytest session per mutant on one reused test database (scripts/mutate_changed.py, mutmut):
a session mutmut stopped for running too long can leave that database half-made or holding a
transactional test's rows, and every later mutant's tests then fail at once, whatever their
mutation: false kills. So each session under mutmut marks the database clean when it ends, and one
that starts without the mark makes the database anew (`--create-db`)."""

import os
from pathlib import Path

CLEAN_MARK = ".mutant-session-clean"


def under_mutmut() -> bool:
    """mutmut names the mutant of each session it runs (and "" or "stats" for its own runs)."""
    return "MUTANT_UNDER_TEST" in os.environ


def start_session(root: Path) -> bool:
    """Whether this session must make the test database anew: the last one did not end. The mark
    is taken away, so a session stopped from now on leaves none."""
    mark = root / CLEAN_MARK
    fresh = not mark.exists()
    mark.unlink(missing_ok=True)
    return fresh


def end_session(root: Path, exitstatus: int) -> None:
    """Mark the database clean after a session that ran its tests to the end (passed or failed);
    an interrupted or broken one leaves no mark."""
    if exitstatus in (0, 1):
        (root / CLEAN_MARK).write_text("", encoding="utf-8")
