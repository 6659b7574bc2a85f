"""scripts/mutate_changed.py on a throwaway repository: it finds the source modules a branch changed
(committed, uncommitted and untracked; not tests, benchmarks or migrations), and mutmut's run on a
module reports the mutant its test cannot see, with file:line, and not the ones its test kills,
leaving the working tree as it was; with functions named, only theirs are run; a kept copy's
mutants are decided again by name in one test session, each torn down before the next."""

import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import pytest

from scripts.mutate_changed import (
    MutantResult,
    by_name,
    candidate_tests,
    changed_modules,
    copy_worktree,
    markdown,
    moved_since,
    mutate,
    time_out_warning,
    unmutated_functions,
)

CALC = """def is_adult(age):
    return age >= 18


def greeting(name):
    return "hello " + name
"""
TEST = """from pkg.calc import greeting, is_adult


def test_eighteen_is_adult():
    assert is_adult(18) and not is_adult(17)


def test_greeting_names_the_person():
    assert greeting("ann").endswith("ann")
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True, capture_output=True
    )


def write(root: Path, name: str, text: str = "") -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("pkg/__init__.py", "tests/__init__.py", "pkg/other.py", "pkg/migrations/__init__.py"):
        write(root, name)
    write(root, "pkg/calc.py", CALC)
    write(root, "tests/test_calc.py", TEST)
    write(root, "pytest.ini", "[pytest]\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


def test_the_changed_source_modules_are_found_and_tests_benchmarks_and_migrations_are_not(repo: Path):
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, "pkg/calc.py", CALC + "\n\ndef committed():\n    return 1\n")
    write(repo, "tests/test_calc.py", TEST + "\n")
    write(repo, "pkg/migrations/0002_more.py", "x = 1\n")
    git(repo, "commit", "-q", "-am", "branch work")
    git(repo, "add", "pkg/migrations/0002_more.py")
    git(repo, "commit", "-q", "-m", "a migration")
    write(repo, "pkg/other.py", "y = 2\n")  # uncommitted
    write(repo, "pkg/new.py", "z = 3\n")  # untracked
    write(repo, "bench/pkg_speed.py", "w = 4\n")
    write(repo, "tests/test_new.py", "")
    write(repo, "notes.py", "")  # not in an app package
    assert changed_modules(repo, "main") == ["pkg/calc.py", "pkg/new.py", "pkg/other.py"]
    assert candidate_tests(repo, "pkg/calc.py") == ["tests/test_calc.py"]


def test_a_surviving_mutant_is_reported_at_its_line_and_a_killed_one_is_not(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The throwaway repository's pytest loads no plugin (this suite's Django settings are not there).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    results, table, report = mutate(
        ["pkg/calc.py"], repo=repo, python=sys.executable, report_dir=tmp_path / "out", say=lambda line: None
    )
    survived = [r for r in results if r.status == "survived"]
    killed = [r for r in results if r.status == "killed"]
    assert survived and {r.function for r in survived} == {"greeting"}
    assert all(r.line == 6 and 'return "hello " + name' in r.diff for r in survived)
    assert killed and {r.function for r in killed} >= {"is_adult"}
    row = table["pkg/calc.py"]
    assert row["killed"] == len(killed) and row["counted"] == len(killed) + len(survived)
    assert report.is_file() and "pkg/calc.py:6 greeting (survived)" in report.with_suffix(".md").read_text()
    assert (repo / "pkg/calc.py").read_text() == CALC
    assert not (repo / "mutants").exists()


def test_named_functions_alone_are_mutated_and_the_others_left_not_checked(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    results, table, _ = mutate(
        ["pkg/calc.py"],
        repo=repo,
        python=sys.executable,
        report_dir=tmp_path / "out",
        functions=["is_adult"],
        say=lambda line: None,
    )
    checked = {r.function for r in results if r.status != "not checked"}
    assert checked == {"is_adult"}
    assert {r.status for r in results if r.function == "greeting"} == {"not checked"}
    assert table["pkg/calc.py"]["counted"] == len([r for r in results if r.function == "is_adult"])


def test_a_file_edited_in_the_tree_after_the_copy_is_named_as_tested_older(repo: Path, tmp_path: Path):
    # Another hand editing the checkout during a long run: the copy keeps the file as it was.
    copied = copy_worktree(repo, tmp_path / "copy")
    assert moved_since(repo, copied) == []
    write(repo, "tests/test_calc.py", TEST + "\n# edited meanwhile\n")
    (repo / "pkg/other.py").unlink()
    assert moved_since(repo, copied) == ["pkg/other.py", "tests/test_calc.py"]
    assert (tmp_path / "copy/tests/test_calc.py").read_text() == TEST


def test_a_run_with_a_time_out_warns_that_its_kills_need_confirming_and_one_without_does_not():
    def result(number: int, status: str) -> MutantResult:
        return MutantResult(f"pkg.calc.x_is_adult__mutmut_{number}", "pkg/calc.py", "is_adult", status)

    clean = [result(1, "killed"), result(2, "survived"), result(3, "not checked")]
    assert time_out_warning(clean) is None
    warning = time_out_warning([*clean, result(4, "timeout"), result(5, "killed")])
    assert warning is not None
    assert warning.startswith("1 mutant(s) timed out (pkg.calc.x_is_adult__mutmut_4)")
    assert "the 2 killed may include false kills" in warning and "--by-name" in warning
    many = time_out_warning([result(n, "timeout") for n in range(7)])
    assert many is not None and many.startswith("7 mutant(s) timed out (") and ", ...)" in many


DECORATED = """import functools


def plain(x):
    return x + 1


@functools.cache
def cached(x):
    return x * 2


class Box:
    @staticmethod
    def make():
        return Box()

    @property
    def size(self):
        return 3

    @functools.lru_cache(maxsize=2)
    @staticmethod
    def twice(x):
        return 2 * x
"""


def test_decorated_functions_are_named_as_not_mutated_and_plain_or_static_ones_are_not(tmp_path: Path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text(DECORATED)
    found = unmutated_functions(tmp_path, "pkg/mod.py")
    assert [(f.function, f.line, f.lines, f.decorators) for f in found] == [
        ("cached", 9, 2, "functools.cache"),
        ("Box.size", 19, 2, "property"),
        ("Box.twice", 24, 2, "functools.lru_cache(maxsize=2), staticmethod"),
    ]
    meta: dict[str, object] = {"when": "now", "seconds": 1, "tests": [], "unmutated": [asdict(f) for f in found]}
    report = markdown([], {}, meta)
    assert "## Not mutated" in report
    assert "- pkg/mod.py:9 cached (2 lines; @functools.cache)" in report
    assert "Box.make" not in report and "plain" not in report
    assert "## Not mutated" not in markdown([], {}, {**meta, "unmutated": []})


WHOLE_GREETING = """import pytest

from pkg.calc import greeting


@pytest.fixture(scope="module")
def logged(request):
    log = request.config.rootpath / "fixture.log"
    with log.open("a") as out:
        out.write("setup\\n")
    yield
    with log.open("a") as out:
        out.write("teardown\\n")


def test_the_whole_greeting(logged):
    assert greeting("ann") == "hello ann"
"""
PASSES_ONCE = """from pathlib import Path


def test_that_leaves_a_mark_behind():
    # State a test leaves behind (a row, a file) fails its next run, whatever the code.
    mark = Path(__file__).with_name("left-behind")
    assert not mark.exists()
    mark.write_text("")
"""
FAILS_ANYWAY = """def test_that_fails_whatever_the_code():
    assert False
"""


def test_a_kept_copys_survivors_are_decided_by_name_each_torn_down_before_the_next(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("DJANGO_SETTINGS_MODULE", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the kept copy goes with the test's folder
    said: list[str] = []
    results, _, _ = mutate(
        ["pkg/calc.py"], repo=repo, python=sys.executable, report_dir=tmp_path / "out", keep=True, say=said.append
    )
    kept = Path(next(line for line in said if line.startswith("kept the copy: ")).removeprefix("kept the copy: "))
    survivors = sorted(r.name for r in results if r.status == "survived")
    assert survivors and all(".x_greeting__mutmut_" in name for name in survivors)
    out = tmp_path / "by-name"

    # On the tests mutmut saw calling greeting (its stats), they survive again.
    _, _, _, verdicts = by_name(kept, python=sys.executable, report_dir=out, say=said.append)
    assert sorted(verdicts) == survivors
    assert {v["status"] for v in verdicts.values()} == {"survived"}

    # A test written since kills them; each kill is its test failing with the mutant and passing without it.
    write(kept, "mutants/tests/test_whole_greeting.py", WHOLE_GREETING)
    results, table, report, verdicts = by_name(
        kept, tests=["tests/test_whole_greeting.py"], python=sys.executable, report_dir=out, say=said.append
    )
    assert sorted(verdicts) == survivors
    assert {v["status"] for v in verdicts.values()} == {"killed"}
    assert {v["test"] for v in verdicts.values()} == {"tests/test_whole_greeting.py::test_the_whole_greeting"}
    assert {r.status for r in results} == {"killed"} and table["pkg/calc.py"]["score"] == 100.0
    assert "| pkg/calc.py |" in report.with_suffix(".md").read_text()
    # The module's fixture was made and ended for each run of its test: once before any mutant, then
    # under each mutant and again without it.
    log = (kept / "mutants/fixture.log").read_text().split()
    assert log == ["setup", "teardown"] * (1 + 2 * len(survivors))

    # A test that fails without the mutant too proves nothing: suspect, and the verdict stays.
    write(kept, "mutants/tests/test_passes_once.py", PASSES_ONCE)
    _, _, _, verdicts = by_name(
        kept, names=survivors[:1], tests=["tests/test_passes_once.py"], python=sys.executable, report_dir=out
    )
    assert verdicts[survivors[0]]["status"] == "suspect"
    assert '"' + survivors[0] + '": 1' in (kept / "mutants/pkg/calc.py.meta").read_text()

    # One that fails before any mutant is switched on stops the run before it decides anything.
    write(kept, "mutants/tests/test_fails_anyway.py", FAILS_ANYWAY)
    with pytest.raises(RuntimeError, match="no mutant was decided"):
        by_name(kept, names=survivors[:1], tests=["tests/test_fails_anyway.py"], python=sys.executable, report_dir=out)
    assert (
        "fails without any mutant" in max((out).glob("by-name-*.log"), key=lambda log: log.stat().st_mtime).read_text()
    )
