"""The code keeps the contract and the reason, not its history: which issue asked for a change and
what it measured before and after belong in the commit, the report and bench/RESULTS-*.md. A
docstring or comment that says "issue 53" sends the reader to a tracker to learn why; say why."""

import re

from tests.test_docs_are_true import REPO, project_python_files

ISSUE_REFERENCE = re.compile(r"issue [0-9]", re.IGNORECASE)
# Not platform source: the tests, the benchmarks and scripts (which report figures) and migrations.
NOT_PLATFORM = re.compile(r"^(tests|bench|scripts)/|/migrations/")


def platform_sources():
    """Paths, from the repository root, of the project's Python files that are platform source."""
    paths = (path.relative_to(REPO).as_posix() for path in project_python_files())
    return sorted(path for path in paths if not NOT_PLATFORM.search(path))


def issue_references(path):
    text = (REPO / path).read_text(encoding="utf-8")
    return [number for number, line in enumerate(text.splitlines(), 1) if ISSUE_REFERENCE.search(line)]


def test_no_platform_source_names_an_issue():
    found = [f"{path}:{line}" for path in platform_sources() for line in issue_references(path)]
    assert not found, "say why, not which issue (the history goes in the commit):\n" + "\n".join(found)


def test_the_check_finds_an_issue_number():
    assert ISSUE_REFERENCE.search("a scan of every pair (Issue 53)")
    assert not ISSUE_REFERENCE.search("an issue of the market's API")
    assert NOT_PLATFORM.search("corpus/migrations/0001_initial.py") and not NOT_PLATFORM.search("corpus/models.py")
