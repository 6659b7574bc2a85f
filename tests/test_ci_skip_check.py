""".ci/check_skips.py: which skips fail a CI pass, on reports shaped like tests/conftest.py writes them."""

import json
import runpy
import subprocess
import sys

from tests.conftest import REPO_ROOT

check = runpy.run_path(str(REPO_ROOT / ".ci" / "check_skips.py"))


def report(database, *skips, passed=3):
    return {
        "database": database,
        "broker": False,
        "ci": True,
        "exitstatus": 0,
        "collected": passed + len(skips),
        "outcomes": {"passed": passed, "failed": 0, "error": 0, "skipped": len(skips)},
        "skipped": [
            {"nodeid": f"tests/t.py::{name}", "markers": markers, "reason": "r", "when": "setup"}
            for name, markers in skips
        ],
    }


def run(tmp_path, data, pass_name):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / ".ci" / "check_skips.py"), str(path), pass_name],
        capture_output=True,
        text=True,
        check=False,
    )


def test_sqlite_may_skip_postgres_tests_only_and_never_a_browser_test():
    data = report("sqlite3", ("pg", ["postgres"]), ("data", []), ("ui", ["browser", "postgres"]))
    assert [s["nodeid"] for s in check["unexpected_skips"](data, "sqlite3")] == ["tests/t.py::data", "tests/t.py::ui"]


def test_the_postgresql_pass_may_skip_nothing(tmp_path):
    done = run(tmp_path, report("postgresql", ("pg", ["postgres"])), "postgresql")
    assert done.returncode == 1 and "must run in the postgresql pass" in done.stdout
    assert "1 skipped" in done.stdout


def test_a_clean_pass_prints_its_counts_and_succeeds(tmp_path):
    done = run(tmp_path, report("sqlite3", ("pg", ["postgres"])), "sqlite")
    assert done.returncode == 0, done.stdout
    assert "sqlite3 pass: 3 passed, 0 failed, 0 errors, 1 skipped" in done.stdout


def test_a_missing_report_a_wrong_database_or_nothing_passed_fails(tmp_path):
    assert (
        subprocess.run(
            [sys.executable, str(REPO_ROOT / ".ci" / "check_skips.py"), str(tmp_path / "none.json"), "sqlite"],
            capture_output=True,
            check=False,
        ).returncode
        == 1
    )
    assert "expected postgresql" in run(tmp_path, report("sqlite3"), "postgresql").stdout
    assert "no test passed" in run(tmp_path, report("sqlite3", passed=0), "sqlite").stdout
