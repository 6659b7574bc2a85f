"""scripts/coverage_check.py: a pass below its floor fails, and the floor only ever rises."""

import json
import runpy

from tests.conftest import REPO_ROOT

coverage_check = runpy.run_path(str(REPO_ROOT / "scripts" / "coverage_check.py"))


def write_report(tmp_path, lines, statements, branches_covered, branches):
    """A `coverage json` report with one file in the corpus app."""
    summary = {
        "covered_lines": lines,
        "num_statements": statements,
        "covered_branches": branches_covered,
        "num_branches": branches,
    }
    path = tmp_path / "coverage.json"
    path.write_text(json.dumps({"totals": summary, "files": {"corpus/gold.py": {"summary": summary}}}))
    return path


def write_floors(tmp_path, **floors):
    path = tmp_path / "coverage-floor.json"
    path.write_text(json.dumps(floors))
    return path


def run(report, floors, *args):
    return coverage_check["main"](["postgresql", "--report", str(report), "--floors", str(floors), *args])


def test_a_pass_at_or_above_its_floor_passes_and_one_below_fails(tmp_path, capsys):
    floors = write_floors(tmp_path, postgresql={"line": 80.0, "branch": 70.0})
    assert run(write_report(tmp_path, 80, 100, 70, 100), floors) == 0
    assert "line 80.0% (floor 80.0%), branch 70.0% (floor 70.0%)" in capsys.readouterr().out
    assert run(write_report(tmp_path, 79, 100, 90, 100), floors) == 1
    assert "below its floor (line)" in capsys.readouterr().err
    assert run(write_report(tmp_path, 90, 100, 69, 100), floors) == 1
    assert "below its floor (branch)" in capsys.readouterr().err


def test_raise_moves_the_floor_up_rounded_down_and_never_lowers_it(tmp_path):
    floors = write_floors(tmp_path, postgresql={"line": 80.0, "branch": 70.0}, nightly={"line": 1.0, "branch": 1.0})
    assert run(write_report(tmp_path, 8567, 10000, 6000, 10000), floors, "--raise") == 0
    saved = json.loads(floors.read_text())
    # Line rises to 85.6 (85.67 rounded down, so the same run passes); branch stays: 60 < 70.
    assert saved["postgresql"] == {"line": 85.6, "branch": 70.0}
    assert saved["nightly"] == {"line": 1.0, "branch": 1.0}
    assert run(write_report(tmp_path, 8567, 10000, 7000, 10000), floors) == 0


def test_a_missing_report_or_pass_is_an_error_not_a_pass(tmp_path):
    floors = write_floors(tmp_path, nightly={"line": 1.0, "branch": 1.0})
    assert run(tmp_path / "nothing.json", floors) == 2
    assert run(write_report(tmp_path, 1, 1, 1, 1), floors) == 2


def test_the_floor_file_names_the_pass_ci_measures_under_coverage():
    floors = json.loads((REPO_ROOT / "coverage-floor.json").read_text())
    ci = "\n".join(
        line for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines() if not line.lstrip().startswith("#")
    )
    assert set(floors) == {"postgresql"}
    assert floors["postgresql"]["line"] >= 93.0 and floors["postgresql"]["branch"] >= 84.0
    # One pass, under coverage (COVERAGE=0 would turn it off), checked against that floor.
    assert ci.count("make test") == 1 and "COVERAGE=0" not in ci
    assert "coverage_check.py postgresql" in ci
    for floor in floors.values():
        assert set(floor) == {"line", "branch"} and all(0 < value <= 100 for value in floor.values())


def test_a_pass_without_a_floor_is_summarised_but_cannot_be_checked(tmp_path, capsys):
    floors = write_floors(tmp_path, postgresql={"line": 80.0, "branch": 70.0})
    report = write_report(tmp_path, 90, 100, 80, 100)
    summarised = coverage_check["main"](["nightly", "--report", str(report), "--floors", str(floors), "--summary"])
    assert summarised == 0
    assert "coverage, nightly pass: line 90.0% (floor 0.0%), branch 80.0%" in capsys.readouterr().out
    checked = coverage_check["main"](["nightly", "--report", str(report), "--floors", str(floors)])
    assert checked == 2
    assert "has no pass 'nightly'" in capsys.readouterr().err
