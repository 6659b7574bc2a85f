"""The mutation pass runner (scripts/mutation_pass.py) on a repository of two files: a mutant its
test catches is killed, one it cannot see survives, the working tree is never edited, and a mutant
whose old text is not in its file stops the pass with an error naming both before any test runs."""

import subprocess
import sys

import pytest

from scripts.mutation_pass import (
    KILLED,
    REPO,
    SURVIVED,
    Mutant,
    MutantError,
    area_names,
    kill_rate,
    load_area,
    mutation_pass,
    table,
)

CALC = "def is_adult(age):\n    return age >= 18\n"
TEST = "from calc import is_adult\n\n\ndef test_eighteen_is_adult():\n    assert is_adult(18) and not is_adult(17)\n"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    # The runner passes its environment on: the two-file repository's pytest loads no plugin.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(TEST)
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "untracked.py").write_text("raise SystemExit('an untracked file must not be copied')\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "calc.py", "test_calc.py", "pytest.ini"], cwd=root, check=True)
    return root


def run(repo, mutants):
    return mutation_pass(mutants, repo=repo, python=sys.executable, timeout=120, report=lambda *args: None)


def test_a_caught_mutant_is_killed_an_unseen_one_survives_and_the_tree_is_untouched(repo):
    boundary = Mutant("calc.py", "age >= 18", "age > 18", ["test_calc.py"], "eighteen is adult")
    unseen = Mutant("calc.py", "return age >= 18", "return age >= 18 or age > 200", ["test_calc.py"], "nobody is 200")
    outcomes = run(repo, [boundary, unseen])
    assert [outcome.result for outcome in outcomes] == [KILLED, SURVIVED]
    assert kill_rate(outcomes) == 0.5 and "kill rate 50% (1 of 2)" in table(outcomes)
    assert (repo / "calc.py").read_text() == CALC


def test_a_mutant_whose_old_text_is_missing_stops_the_pass_naming_it(repo):
    typo = Mutant("calc.py", "age >= 21", "age > 21", ["test_calc.py"], "twenty-one")
    with pytest.raises(MutantError, match=r"its old text 'age >= 21' is not in calc\.py"):
        run(repo, [Mutant("calc.py", "age >= 18", "age > 18", ["test_calc.py"], "first"), typo])


def test_the_checks_area_declares_at_least_fifteen_mutants_with_tests():
    mutants = load_area("checks")
    assert len(mutants) >= 15 and all(mutant.tests and mutant.behaviour for mutant in mutants)


def test_every_declared_mutant_still_applies_to_the_tree_once():
    # A change that rewrites a line a mutant names makes the pass stop on it: caught here, in CI.
    stale = []
    for area in area_names():
        for mutant in load_area(area):
            path = REPO / mutant.path
            found = path.read_text().count(mutant.old) if path.is_file() else 0
            if found != 1 or not all((REPO / test.split("::")[0]).is_file() for test in mutant.tests):
                stale.append((area, mutant.path, mutant.old[:60], found))
    assert stale == []
