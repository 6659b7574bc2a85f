"""Print a pass's skipped tests and fail on any that pass must run (reads tests/conftest.py's report).

    python .ci/check_skips.py REPORT.json postgresql|sqlite

PostgreSQL pass (PostgreSQL, Redis, a real Celery worker, Chromium): every test must run; no skip at all.
SQLite pass: only tests marked `postgres` may skip (row locks and a Celery worker process need PostgreSQL),
and never a browser test. The marker decides, as tests/conftest.py records it at collection, never
a word in the test's id or path. Both passes: an xfail or an xpass is unexpected unless its test id
is listed in .ci/expected-xfail.txt (one id a line, `#` comments). Exit 1 on an unexpected skip,
xfail or xpass, on a report that is missing, or on a report from the wrong database or with no test run.
"""

import json
import sys
from pathlib import Path


def unexpected_skips(report, expected_database):
    if expected_database == "postgresql":
        return list(report["skipped"])
    return [s for s in report["skipped"] if "postgres" not in s["markers"] or "browser" in s["markers"]]


EXPECTED_XFAIL = Path(__file__).resolve().parent / "expected-xfail.txt"


def expected_xfails(path=EXPECTED_XFAIL):
    if not path.exists():
        return set()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line}


def unexpected_xfails(report, expected=frozenset()):
    """xfail and xpass outcomes whose test is not listed: a test marked to fail proves nothing."""
    found = [("xfailed", entry) for entry in report.get("xfailed", [])]
    found += [("xpassed", entry) for entry in report.get("xpassed", [])]
    return [(outcome, entry) for outcome, entry in found if entry["nodeid"] not in expected]


def main(argv):
    if len(argv) != 3 or argv[2] not in ("postgresql", "sqlite3", "sqlite"):
        print(__doc__, file=sys.stderr)
        return 2
    path, expected = Path(argv[1]), {"sqlite": "sqlite3"}.get(argv[2], argv[2])
    if not path.exists():
        print(f"skip check: no report at {path}; did pytest start?")
        return 1
    report = json.loads(path.read_text())
    problems = []
    if report["database"] != expected:
        problems.append(f"the pass ran on {report['database']}, expected {expected}")
    if "xfailed" not in report:
        problems.append("the report has no xfail/xpass lists (written by an older tests/conftest.py)")
    if report["outcomes"]["passed"] == 0:
        problems.append("no test passed")
    counts = report["outcomes"]
    print(
        f"{expected} pass: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped, {counts.get('xfailed', 0)} xfailed, {counts.get('xpassed', 0)} xpassed "
        f"(of {report['collected']} collected)"
    )
    for skip in report["skipped"]:
        print(f"  skipped {skip['nodeid']} [{', '.join(skip['markers']) or 'no marker'}]: {skip['reason']}")
    bad = unexpected_skips(report, expected)
    for skip in bad:
        problems.append(f"{skip['nodeid']} must run in the {expected} pass but was skipped: {skip['reason']}")
    for outcome, entry in unexpected_xfails(report, expected_xfails()):
        problems.append(
            f"{entry['nodeid']} {outcome} ({entry['reason'] or 'no reason'}); list it in .ci/expected-xfail.txt if meant"
        )
    for problem in problems:
        print(f"SKIP CHECK FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
