"""Print the suite's skipped tests and fail on any (reads tests/conftest.py's report).

    python .ci/check_skips.py REPORT.json

CI runs one pass, on PostgreSQL with Redis, a real Celery worker and Chromium: every test must run,
so any skip fails it. An xfail or an xpass is unexpected too unless its test id is listed in
.ci/expected-xfail.txt (one id a line, `#` comments). Exit 1 on an unexpected skip, xfail or
xpass, on a report that is missing, or on a report from another database or with no test run.
"""

import json
import sys
from pathlib import Path

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
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[1])
    if not path.exists():
        print(f"skip check: no report at {path}; did pytest start?")
        return 1
    report = json.loads(path.read_text())
    problems = []
    if report["database"] != "postgresql":
        problems.append(f"the suite ran on {report['database']}, expected postgresql")
    if "xfailed" not in report:
        problems.append("the report has no xfail/xpass lists (written by an older tests/conftest.py)")
    if report["outcomes"]["passed"] == 0:
        problems.append("no test passed")
    counts = report["outcomes"]
    print(
        f"the suite: {counts['passed']} passed, {counts['failed']} failed, {counts['error']} errors, "
        f"{counts['skipped']} skipped, {counts.get('xfailed', 0)} xfailed, {counts.get('xpassed', 0)} xpassed "
        f"(of {report['collected']} collected)"
    )
    for failure in report.get("failed", []):
        # Where a test that passes alone failed: the files its process ran just before it.
        files = report.get("files_of_process", {}).get(failure["process"], [])
        test_file = failure["nodeid"].split("::", 1)[0]
        before = files[: files.index(test_file)][-12:] if test_file in files else []
        print(f"  failed ({failure['when']}) {failure['nodeid']} in {failure['process']}, after: {' '.join(before)}")
    for skip in report["skipped"]:
        print(f"  skipped {skip['nodeid']} [{', '.join(skip['markers']) or 'no marker'}]: {skip['reason']}")
        problems.append(f"{skip['nodeid']} must run in CI but was skipped: {skip['reason']}")
    for outcome, entry in unexpected_xfails(report, expected_xfails()):
        problems.append(
            f"{entry['nodeid']} {outcome} ({entry['reason'] or 'no reason'}); list it in .ci/expected-xfail.txt if meant"
        )
    for problem in problems:
        print(f"SKIP CHECK FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
