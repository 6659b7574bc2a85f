"""The code keeps the contract and the reason, not its history: which issue asked for a change and
what it measured before and after belong in the commit, the report and bench/RESULTS-*.md. A
docstring or comment that names an issue by its number sends the reader to a tracker to learn why;
say why. Every Python file of the project is read: platform source, tests, benchmarks, scripts and
migrations alike."""

import re

from tests.test_docs_are_true import REPO, project_python_files

ISSUE_REFERENCE = re.compile(r"issues? [0-9]", re.IGNORECASE)
# Lines where an issue number is data, not prose, each named by the start of its code: the words of a
# template comment that a test asserts a page never shows.
DATA_LINES = {"tests/dashboard/test_browser_issue73.py": ("for comment_mark in (",)}


def python_files():
    """Paths, from the repository root, of every Python file of the project."""
    return sorted(path.relative_to(REPO).as_posix() for path in project_python_files())


def issue_references(path):
    text = (REPO / path).read_text(encoding="utf-8")
    data = DATA_LINES.get(path, ())
    return [
        number
        for number, line in enumerate(text.splitlines(), 1)
        if ISSUE_REFERENCE.search(line) and not line.strip().startswith(data)
    ]


def test_no_python_file_names_an_issue():
    found = [f"{path}:{line}" for path in python_files() for line in issue_references(path)]
    assert not found, "say why, not which issue (the history goes in the commit):\n" + "\n".join(found)


def test_every_exception_is_still_needed():
    """An exception whose line or references are gone would hide the next reference written there."""
    for path, starts in DATA_LINES.items():
        lines = [line.strip() for line in (REPO / path).read_text(encoding="utf-8").splitlines()]
        for start in starts:
            data = [line for line in lines if line.startswith(start) and ISSUE_REFERENCE.search(line)]
            assert data, f"{path}: no line starting {start!r} names an issue now: drop it from DATA_LINES"


def test_the_check_finds_an_issue_number():
    # The number is formatted in, so that this line itself holds no issue reference.
    assert ISSUE_REFERENCE.search(f"a scan of every pair (Issue {53})")
    assert ISSUE_REFERENCE.search(f"a release (issues {42}.4, {49}.5)")
    assert not ISSUE_REFERENCE.search("an issue of the market's API")
    # Every part of the project is read, not only the platform's source.
    files = set(python_files())
    assert {"corpus/models.py", "corpus/migrations/0001_initial.py", "bench/run.py"} <= files
    assert {"scripts/install.py", "tests/test_no_history_in_code.py"} <= files
