"""The mutation pass: do the tests that guard a behaviour fail when it breaks?

    .venv/bin/python scripts/mutation_pass.py [--area checks] [--list] [--skip-baseline]

A mutant is one injected bug: an exact text `old` in `path` (it must occur there exactly once)
replaced by `new`, with the pytest node ids or files (`tests`) that should catch it and the
`behaviour` it breaks, in words. Mutants are declared per area in `scripts/mutants/<area>.py`, a
module with `MUTANTS = [Mutant(...), ...]`.

The working tree is never edited. The tracked files (`git ls-files`) are copied once into a
temporary directory; each mutant is applied there, its tests run with `.venv/bin/python -m pytest
-x -q` in that copy (this process's environment passed through: DATABASE_URL, CELERY_BROKER_URL,
CACHE_URL, NLI_SHARED_DATA, ...), and the file is restored before the next. A baseline run of all
the selected mutants' tests on the unmutated copy comes first: a test that fails without a mutant
would "kill" every mutant it guards. The table gives area, file, behaviour and the outcome: killed
(the tests failed: pytest exit 1, or 2 when the mutant breaks an import), survived (they passed),
or error (no test ran: a wrong node id, pytest exit 4 or 5); the kill rate counts killed of killed
and survived. Exit status 1 when a mutant survived or erred.
"""

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MUTANTS_DIR = REPO / "scripts" / "mutants"
TEMP_PREFIX = "mutation-pass-"
KILLED, SURVIVED, ERROR = "killed", "survived", "error"


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository root
    old: str
    new: str
    tests: Sequence[str]
    behaviour: str
    area: str = field(default="", compare=False)


class MutantError(ValueError):
    """A mutant that cannot be applied (its `old` text missing or ambiguous, its file absent)."""


@dataclass(frozen=True)
class Outcome:
    mutant: Mutant
    result: str
    seconds: float
    detail: str = ""


def area_names(mutants_dir: Path = MUTANTS_DIR) -> list[str]:
    return sorted(path.stem for path in mutants_dir.glob("*.py") if not path.stem.startswith("_"))


def load_area(name: str, mutants_dir: Path = MUTANTS_DIR) -> list[Mutant]:
    """The MUTANTS of `scripts/mutants/<name>.py`, each marked with its area."""
    path = mutants_dir / f"{name}.py"
    if not path.is_file():
        raise MutantError(f"no mutants module {path} (areas: {', '.join(area_names(mutants_dir)) or 'none'})")
    spec = importlib.util.spec_from_file_location(f"mutants_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    declared = getattr(module, "MUTANTS", None)
    if not isinstance(declared, list) or not declared:
        raise MutantError(f"{path} declares no MUTANTS list")
    return [
        Mutant(path=m.path, old=m.old, new=m.new, tests=tuple(m.tests), behaviour=m.behaviour, area=name)
        for m in declared
    ]


def mutated_text(root: Path, mutant: Mutant) -> tuple[str, str]:
    """(the file's text, the text with the mutant applied); MutantError unless `old` occurs exactly once."""
    where = f"{mutant.area or 'mutant'}: {mutant.behaviour!r}"
    path = root / mutant.path
    if not path.is_file():
        raise MutantError(f"{where}: {mutant.path} is not a tracked file")
    if not mutant.tests:
        raise MutantError(f"{where}: names no tests that guard it")
    text = path.read_text(encoding="utf-8")
    found = text.count(mutant.old)
    if found != 1:
        what = "is not in" if found == 0 else f"occurs {found} times in"
        raise MutantError(f"{where}: its old text {mutant.old!r} {what} {mutant.path} (it must occur exactly once)")
    return text, text.replace(mutant.old, mutant.new)


def copy_tracked_files(repo: Path, dest: Path) -> int:
    """Copy the files git tracks in `repo` into `dest` (read-only use of git); returns how many."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=repo, check=True, capture_output=True).stdout
    count = 0
    for name in filter(None, listed.decode("utf-8").split("\0")):
        source = repo / name
        if not source.is_file():  # deleted in the working tree, or a submodule
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        count += 1
    return count


def default_python(repo: Path = REPO) -> str:
    venv = repo / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def run_tests(root: Path, tests: Sequence[str], *, python: str, timeout: float) -> tuple[int, str]:
    """pytest's exit status and the tail of its output, run in `root` with this environment."""
    env = dict(os.environ)
    env.setdefault("NLI_SHARED_DATA", str(REPO.parent / "shared" / "data"))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a stale .pyc of the unmutated file must never be used
    try:
        done = subprocess.run(
            [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f} s"
    output = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode, " | ".join(output[-3:])


def run_mutant(root: Path, mutant: Mutant, *, python: str, timeout: float) -> Outcome:
    """Apply one mutant in the copy at `root`, run its tests, restore the file."""
    original, mutated = mutated_text(root, mutant)
    path = root / mutant.path
    started = time.monotonic()
    path.write_text(mutated, encoding="utf-8")
    try:
        status, tail = run_tests(root, mutant.tests, python=python, timeout=timeout)
    finally:
        path.write_text(original, encoding="utf-8")
    seconds = time.monotonic() - started
    if status == 0:
        return Outcome(mutant, SURVIVED, seconds, tail)
    if status in (1, 2, -1):  # failed, or an import the mutant broke, or hung: caught
        return Outcome(mutant, KILLED, seconds, tail)
    return Outcome(mutant, ERROR, seconds, f"pytest exit {status}: {tail}")


def kill_rate(outcomes: Sequence[Outcome]) -> float:
    judged = [o for o in outcomes if o.result in (KILLED, SURVIVED)]
    return sum(o.result == KILLED for o in judged) / len(judged) if judged else 0.0


def table(outcomes: Sequence[Outcome]) -> str:
    rows = [("area", "file", "behaviour", "result", "s")] + [
        (o.mutant.area, o.mutant.path, o.mutant.behaviour, o.result, f"{o.seconds:.0f}") for o in outcomes
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4].rjust(4) for row in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    killed = sum(o.result == KILLED for o in outcomes)
    survived = sum(o.result == SURVIVED for o in outcomes)
    errors = len(outcomes) - killed - survived
    lines.append(
        f"\nkilled {killed}, survived {survived}, errors {errors}: kill rate {kill_rate(outcomes):.0%}"
        f" ({killed} of {killed + survived})"
    )
    return "\n".join(lines)


def mutation_pass(
    mutants: Sequence[Mutant],
    *,
    repo: Path = REPO,
    python: str | None = None,
    timeout: float = 900,
    baseline: bool = True,
    report=print,
) -> list[Outcome]:
    """Copy `repo`'s tracked files once, check every mutant applies, run the baseline, then each mutant."""
    python = python or default_python(repo)
    copy = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX))
    try:
        report(f"copied {copy_tracked_files(repo, copy)} tracked files to {copy}")
        for mutant in mutants:  # every mutant checked before any test runs: a typo fails at once
            mutated_text(copy, mutant)
        if baseline:
            tests = list(dict.fromkeys(test for mutant in mutants for test in mutant.tests))
            status, tail = run_tests(copy, tests, python=python, timeout=timeout * 2)
            if status != 0:
                raise MutantError(f"the guarding tests fail without any mutant (pytest exit {status}): {tail}")
            report(f"baseline: {len(tests)} guarding test ids pass unmutated")
        outcomes = []
        for mutant in mutants:
            outcome = run_mutant(copy, mutant, python=python, timeout=timeout)
            report(f"  {outcome.result:<8} {mutant.path}: {mutant.behaviour} ({outcome.seconds:.0f} s)")
            outcomes.append(outcome)
        return outcomes
    finally:
        # Only the directory mkdtemp just made: never a path that could be empty or the checkout.
        if copy.name.startswith(TEMP_PREFIX) and copy.parent == Path(tempfile.gettempdir()):
            shutil.rmtree(copy)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--area", action="append", help="a module of scripts/mutants/ (repeatable; default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their tests, run nothing")
    parser.add_argument("--skip-baseline", action="store_true", help="do not run the tests unmutated first")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per mutant's test run")
    args = parser.parse_args(argv)
    try:
        mutants = [mutant for area in (args.area or area_names()) for mutant in load_area(area)]
        if args.list:
            for mutant in mutants:
                print(f"{mutant.area}: {mutant.path}: {mutant.behaviour}\n    tests: {' '.join(mutant.tests)}")
            return 0
        outcomes = mutation_pass(mutants, timeout=args.timeout, baseline=not args.skip_baseline)
    except MutantError as error:
        print(f"mutation pass: {error}", file=sys.stderr)
        return 2
    print()
    print(table(outcomes))
    return 0 if all(o.result == KILLED for o in outcomes) else 1


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    # The mutants modules import Mutant from scripts.mutation_pass: one class, whichever way it ran.
    from scripts import mutation_pass as runner

    sys.exit(runner.main())
