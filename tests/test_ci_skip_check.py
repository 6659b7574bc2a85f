""".ci/check_skips.py: which skips fail a CI pass, on reports shaped like tests/conftest.py writes them."""

import json
import os
import runpy
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT

check = runpy.run_path(str(REPO_ROOT / ".ci" / "check_skips.py"))


def report(database, *skips, passed=3, xfailed=(), xpassed=()):
    return {
        "xfailed": [{"nodeid": f"tests/t.py::{name}", "reason": "r", "when": "call"} for name in xfailed],
        "xpassed": [{"nodeid": f"tests/t.py::{name}", "reason": "r", "when": "call"} for name in xpassed],
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


def run(tmp_path, data):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / ".ci" / "check_skips.py"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_one_pass_may_skip_nothing_whatever_its_markers(tmp_path):
    done = run(tmp_path, report("postgresql", ("ui", ["browser"]), ("data", [])))
    assert done.returncode == 1
    assert "tests/t.py::ui must run in CI" in done.stdout and "tests/t.py::data must run in CI" in done.stdout
    assert "2 skipped" in done.stdout


def test_a_clean_pass_prints_its_counts_and_succeeds(tmp_path):
    done = run(tmp_path, report("postgresql"))
    assert done.returncode == 0, done.stdout
    assert "the suite: 3 passed, 0 failed, 0 errors, 0 skipped" in done.stdout


def test_a_missing_report_another_database_or_nothing_passed_fails(tmp_path):
    missing = [sys.executable, str(REPO_ROOT / ".ci" / "check_skips.py"), str(tmp_path / "none.json")]
    assert subprocess.run(missing, capture_output=True, check=False).returncode == 1
    assert "expected postgresql" in run(tmp_path, report("sqlite3")).stdout
    assert "no test passed" in run(tmp_path, report("postgresql", passed=0)).stdout


def test_an_xfail_or_an_xpass_fails_a_pass_unless_it_is_listed(tmp_path):
    done = run(tmp_path, report("postgresql", xfailed=["broken"], xpassed=["lucky"]))
    assert done.returncode == 1, done.stdout
    assert "tests/t.py::broken xfailed" in done.stdout and "tests/t.py::lucky xpassed" in done.stdout
    listed = tmp_path / "expected.txt"
    listed.write_text("# known\ntests/t.py::broken  # upstream bug\ntests/t.py::lucky\n")
    data = report("postgresql", xfailed=["broken"], xpassed=["lucky"])
    assert check["unexpected_xfails"](data, check["expected_xfails"](listed)) == []


def test_a_report_without_xfail_lists_is_refused(tmp_path):
    data = report("postgresql")
    del data["xfailed"], data["xpassed"]
    assert run(tmp_path, data).returncode == 1


# --- the real conftest on real tests: a pass, its report, and the check ----------------------------

FAKE_SUITE = {
    "postgres/test_in_a_postgres_folder.py": "def test_required_everywhere():\n    assert True\n",
    "test_ids.py": """
        import pytest

        @pytest.mark.parametrize("backend", ["postgres"])
        def test_required_with_a_postgres_id(backend):
            assert True

        def test_postgres_in_the_name_only():
            assert True

        @pytest.mark.xfail(reason="planted")
        def test_marked_to_fail():
            assert False
    """,
}


@pytest.fixture(scope="module")
def fake_pass(tmp_path_factory):
    """The fake suite run under tests/conftest.py (as a plugin), as CI runs the suite."""
    root = tmp_path_factory.mktemp("suite")
    for name, text in FAKE_SUITE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    report_path = root / "report.json"
    env = {key: value for key, value in os.environ.items() if key != "CELERY_BROKER_URL"}
    env.update(NLI_SKIP_REPORT=str(report_path), CI="true", PYTHONPATH=str(REPO_ROOT))
    command = [sys.executable, "-m", "pytest", "-c", str(REPO_ROOT / "pytest.ini"), "--rootdir", str(root)]
    done = subprocess.run(
        [*command, "-p", "tests.conftest", "-q", "-rA", "--import-mode=importlib", str(root)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert report_path.exists(), done.stdout + done.stderr
    return json.loads(report_path.read_text()), done.stdout


def test_no_name_or_folder_skips_a_test_and_the_report_names_the_database(fake_pass):
    data, output = fake_pass
    assert data["skipped"] == [], output
    assert data["outcomes"]["passed"] == 3, output
    assert data["database"] == "postgresql"


def test_the_fake_pass_fails_the_check_on_its_unlisted_xfail_only(fake_pass, tmp_path):
    data, _ = fake_pass
    assert [entry["nodeid"].rpartition("::")[2] for entry in data["xfailed"]] == ["test_marked_to_fail"]
    done = run(tmp_path, data)
    assert done.returncode == 1
    problems = [line for line in done.stdout.splitlines() if line.startswith("SKIP CHECK FAILED")]
    assert len(problems) == 1 and "test_marked_to_fail xfailed" in problems[0], done.stdout


def test_ci_run_declares_itself_ci_and_never_asks_for_new_golden_files():
    commands = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [line for line in commands if line and not line.startswith("#")]
    first_pass = next(index for index, line in enumerate(commands) if "make test" in line)
    assert sum("make test" in line for line in commands) == 1  # one pass
    assert "export CI=true" in commands[:first_pass]
    assert "unset NLI_UPDATE_GOLDEN" in commands[:first_pass]


def test_golden_files_are_never_rewritten_in_ci(monkeypatch):
    from tests.modeling.test_export_golden import rewrite_golden_requested

    monkeypatch.setenv("NLI_UPDATE_GOLDEN", "1")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="never rewritten"):
        rewrite_golden_requested()
    monkeypatch.delenv("CI")
    assert rewrite_golden_requested() is True


def test_a_failure_is_printed_with_the_files_its_process_ran_before_it(tmp_path):
    data = report("postgresql")
    data["failed"] = [{"nodeid": "tests/c.py::test_leaked_into", "when": "call", "process": "gw1"}]
    data["files_of_process"] = {"gw0": ["tests/x.py", "tests/c.py"], "gw1": ["tests/a.py", "tests/b.py", "tests/c.py"]}
    done = run(tmp_path, data)
    assert "failed (call) tests/c.py::test_leaked_into in gw1, after: tests/a.py tests/b.py" in done.stdout
