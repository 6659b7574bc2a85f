"""Print a pass's skipped tests and fail on any that pass must run (reads tests/conftest.py's report).

    python .ci/check_skips.py REPORT.json postgresql|sqlite

PostgreSQL pass (PostgreSQL, Redis, a real worker, Chromium): every test must run; no skip at all.
SQLite pass: only tests marked `postgres` may skip (row locks and a worker process need PostgreSQL),
and never a browser test. Exit 1 on an unexpected skip, on a report that is missing, or on a
report from the wrong database or with no test run.
"""

import json
import sys
from pathlib import Path


def unexpected_skips(report, expected_database):
    if expected_database == "postgresql":
        return list(report["skipped"])
    return [s for s in report["skipped"] if "postgres" not in s["markers"] or "browser" in s["markers"]]


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
    if report["outcomes"]["passed"] == 0:
        problems.append("no test passed")
    counts = report["outcomes"]
    print(
        f"{expected} pass: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped (of {report['collected']} collected)"
    )
    for skip in report["skipped"]:
        print(f"  skipped {skip['nodeid']} [{', '.join(skip['markers']) or 'no marker'}]: {skip['reason']}")
    bad = unexpected_skips(report, expected)
    for skip in bad:
        problems.append(f"{skip['nodeid']} must run in the {expected} pass but was skipped: {skip['reason']}")
    for problem in problems:
        print(f"SKIP CHECK FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
