"""Mutants from a library (mutmut) on the modules a branch changed: do the tests that run a function
fail when one of its operators is flipped?

    .venv/bin/python scripts/mutate_changed.py [--base main] [--modules markets/payments.py ...]
        [--tests tests/markets/test_payments.py ...] [--functions _claim_owed Class.method ...]
        [--max-children 1] [--keep] [--list]
    .venv/bin/python scripts/mutate_changed.py --by-name KEPT [--mutants name ...] [--tests ...]

Which modules: those `git diff --name-only <base>...HEAD` names, plus the uncommitted and untracked
ones (`git status`), that are Python source of an app package (not under tests/, bench/ or a
migrations folder); `--modules` names them instead.

Which tests: for each module, the test files that import it by name (`markets.payments`, `from
markets import payments`), plus any `--tests`. mutmut runs them once on the unmutated code recording
which test called which function (its trampolines), and then runs each mutant of a function only on
the tests that called that function, stopping at the first failure (`pytest -x`). A function no
test called gives "no tests" mutants: they count as not killed. `--tests` names the test files (or
node ids) instead: for a module whose importers are many, the ones that guard it.

Which mutants: every one of the modules, or with `--functions` only those of the functions named
(`name`, or `Class.method` for a method), given to `mutmut run` as name patterns; the others stay
"not checked". mutmut checks a module from the end of the file up, so a run stopped by `--minutes`
never reaches the top functions of a long module: name them.

The working tree is never edited: the files git lists (tracked, and untracked but not ignored) are
copied into a temporary directory, and mutmut writes its mutated copy (`mutants/`) inside that one.
The tests run with this process's environment (DATABASE_URL, CELERY_BROKER_URL, CACHE_URL): give the
run a database of its own. `--reuse-db` (from `[tool.mutmut]` in pyproject.toml) keeps the migrated
test database from one mutant's pytest session to the next.

Output: the survivors with file:line and the diff of the mutation, a per-module score (killed of
killed, survived and no-tests; a time-out counts as killed), and a JSON and a Markdown report under
var/mutation/. A run in which a mutant timed out warns that its later kills need confirming by name. Exit status 1 when a mutant was not killed.

`--by-name KEPT` decides again, in one test session, the mutants a kept copy did not kill
(scripts/mutants_by_name.py says how); docs/checks.md says when that is the way to a verdict.
"""

import argparse
import ast
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

REPO = Path(__file__).resolve().parent.parent
SKIPPED_TOP = {"tests", "bench", "scripts"}
KILLED_STATUSES = {"killed", "timeout", "caught by type check", "segfault"}
NOT_KILLED_STATUSES = {"survived", "no tests"}
# mutmut's stats.status_by_exit_code, the part a run can produce (its module imports its whole CLI).
STATUS_BY_EXIT_CODE = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    36: "timeout",
    37: "caught by type check",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    -11: "segfault",
    -9: "segfault",
}


@dataclass(frozen=True)
class MutantResult:
    name: str  # mutmut's key: markets.answers.x_read_settles__mutmut_2
    module: str  # markets/answers.py
    function: str  # read_settles, or Class.method
    status: str
    line: int | None = None
    diff: str = ""


def git_lines(repo: Path, *args: str) -> list[str]:
    out = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if line.strip()]


def is_source_module(repo: Path, path: str) -> bool:
    """A Python file of an app package (its top folder has an __init__.py): not a test, a benchmark,
    a script or a migration, and still in the working tree."""
    parts = Path(path).parts
    return (
        path.endswith(".py")
        and len(parts) >= 2
        and parts[0] not in SKIPPED_TOP
        and "migrations" not in parts
        and (repo / parts[0] / "__init__.py").is_file()
        and (repo / path).is_file()
    )


def changed_modules(repo: Path = REPO, base: str = "main") -> list[str]:
    """The source modules the branch changed against `base`, committed or not (untracked included)."""
    names = set(git_lines(repo, "diff", "--name-only", f"{base}...HEAD"))
    names |= set(git_lines(repo, "diff", "--name-only", "HEAD"))
    names |= set(git_lines(repo, "ls-files", "--others", "--exclude-standard"))
    return sorted(name for name in names if is_source_module(repo, name))


def dotted(module: str) -> str:
    return module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def candidate_tests(repo: Path, module: str) -> list[str]:
    """Test files that import `module` by its name (`a.b`, `from a import b`, `from a.b import x`)."""
    name = dotted(module)
    package, _, leaf = name.rpartition(".")
    patterns = [re.compile(rf"^\s*(from|import)\s+{re.escape(name)}\b", re.M)]
    if package:
        patterns.append(re.compile(rf"^\s*from\s+{re.escape(package)}\s+import\s+[^\n]*\b{re.escape(leaf)}\b", re.M))
    found = []
    for path in sorted((repo / "tests").rglob("test*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if any(pattern.search(text) for pattern in patterns):
            found.append(path.relative_to(repo).as_posix())
    return found


def copy_worktree(repo: Path, dest: Path) -> dict[str, tuple[int, int]]:
    """Copy what git lists in `repo` (tracked, and untracked but not ignored) into `dest`; each
    copied file's (size, mtime in ns) as it was copied, for `moved_since`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        check=True,
        capture_output=True,
    ).stdout
    copied: dict[str, tuple[int, int]] = {}
    for name in filter(None, listed.decode("utf-8").split("\0")):
        source = repo / name
        if not source.is_file():  # deleted in the working tree, or a submodule
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        stat = target.stat()
        copied[name] = (stat.st_size, stat.st_mtime_ns)
    return copied


def moved_since(repo: Path, copied: dict[str, tuple[int, int]]) -> list[str]:
    """The copied files that the working tree has changed or removed since: the run tested a tree
    older than these (someone edited the checkout meanwhile), so a test that failed unmutated in
    the copy and passes in the tree, or a survivor, may be the copy's age, not the code's."""
    moved = []
    for name, stamp in copied.items():
        path = repo / name
        if not path.is_file():
            moved.append(name)
            continue
        stat = path.stat()
        if (stat.st_size, stat.st_mtime_ns) != stamp:
            moved.append(name)
    return sorted(moved)


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"[tool.mutmut] holds a value this script cannot write: {value!r}")


def mutmut_config(root: Path, modules: Sequence[str], tests: Sequence[str]) -> dict[str, object]:
    """`[tool.mutmut]` of `root`'s pyproject.toml, with what to copy, mutate and run filled in.
    mutmut runs the tests inside its `mutants/` copy, so every package goes there (`source_paths`),
    everything else at the top beside it (`also_copy`), and only `modules` are mutated."""
    pyproject = root / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8")) if pyproject.is_file() else {}
    config: dict[str, object] = dict(data.get("tool", {}).get("mutmut", {}))
    top = sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.name not in {"mutants", "tests"})
    packages = [p.name for p in top if p.is_dir() and (p / "__init__.py").is_file()]
    config["source_paths"] = packages
    config["also_copy"] = [p.name for p in top if p.name not in packages]
    config["only_mutate"] = list(modules)
    config["pytest_add_cli_args_test_selection"] = list(tests)
    return config


def write_mutmut_config(root: Path, config: dict[str, object]) -> None:
    """Replace `[tool.mutmut]` in `root`'s pyproject.toml (a copy) with `config`."""
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.is_file() else ""
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)
    body = "".join(f"{key} = {toml_value(value)}\n" for key, value in config.items())
    pyproject.write_text(text.rstrip("\n") + "\n\n[tool.mutmut]\n" + body, encoding="utf-8")


def mutant_function(name: str, module: str) -> str:
    """`read_settles` from `markets.answers.x_read_settles__mutmut_2`; `Class.method` from mutmut's
    `markets.payments.xǁClassǁmethod__mutmut_3`."""
    local = name.removeprefix(dotted(module) + ".").rsplit("__mutmut_", 1)[0]
    if local.startswith("xǁ"):
        return ".".join(part for part in local.removeprefix("xǁ").split("ǁ") if part)
    return local.removeprefix("x_")


def function_span(source: str, function: str) -> tuple[int, int] | None:
    """First and last line of `function` (`name` or `Class.name`) in `source`, decorators included."""
    scopes: list[tuple[list[str], ast.AST]] = [([], ast.parse(source))]
    while scopes:
        prefix, node = scopes.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qualified = [*prefix, child.name]
                if ".".join(qualified) == function and not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    return first, child.end_lineno or child.lineno
                scopes.append((qualified, child))
    return None


def mutant_patterns(modules: Sequence[str], functions: Sequence[str]) -> list[str]:
    """mutmut's name patterns for the mutants of `functions` (`name` or `Class.method`) in each of
    `modules`: `markets.payments.x__claim_owed__mutmut_*`, `markets.payments.xǁPaymentOutcomeǁline__mutmut_*`."""
    patterns = []
    for module in modules:
        for function in functions:
            owner, _, name = function.rpartition(".")
            mangled = f"xǁ{owner}ǁ{name}" if owner else f"x_{name}"
            patterns.append(f"{dotted(module)}.{mangled}__mutmut_*")
    return patterns


def mutated_line(source: str, function: str, diff: str) -> int | None:
    """The file line of the diff's first removed line, looked for inside the function."""
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    span = function_span(source, function)
    if not removed or span is None:
        return span[0] if span else None
    lines = source.splitlines()
    for number in range(span[0], span[1] + 1):
        if lines[number - 1].strip() == removed[0].strip():
            return number
    return span[0]


DIFFS_SNIPPET = """
import json, sys
from mutmut.mutation.diff_apply import get_diff_for_mutant
names = json.load(sys.stdin)
print(json.dumps({name: get_diff_for_mutant(name) for name in names}))
"""


def collect(root: Path, modules: Sequence[str], python: str) -> list[MutantResult]:
    """Each mutant's status from mutmut's `mutants/<module>.meta`, with file:line and diff for those
    not killed."""
    raw: list[tuple[str, str, str]] = []
    for module in modules:
        meta = root / "mutants" / f"{module}.meta"
        if not meta.is_file():
            continue
        codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
        for name, code in codes.items():
            status = "not checked" if code is None else STATUS_BY_EXIT_CODE.get(code, "suspicious")
            raw.append((name, module, status))
    wanted = [name for name, _, status in raw if status not in KILLED_STATUSES | {"not checked"}]
    diffs: dict[str, str] = {}
    if wanted:
        shown = subprocess.run(
            [python, "-c", DIFFS_SNIPPET], cwd=root, input=json.dumps(wanted), capture_output=True, text=True
        )
        if shown.returncode == 0:
            diffs = json.loads(shown.stdout.strip().splitlines()[-1])
    results = []
    for name, module, status in raw:
        function = mutant_function(name, module)
        diff = diffs.get(name, "")
        line = mutated_line((root / module).read_text(encoding="utf-8"), function, diff) if diff else None
        results.append(MutantResult(name, module, function, status, line, diff))
    return sorted(results, key=lambda r: (r.module, r.line or 0, r.name))


@dataclass(frozen=True)
class UnmutatedFunction:
    module: str
    function: str  # name, or Class.method
    line: int
    lines: int
    decorators: str


def unmutated_functions(repo: Path, module: str) -> list[UnmutatedFunction]:
    """The functions of `module` mutmut makes no mutant of: decorated ones (mutmut 3 leaves every
    decorated function alone except a bare `@staticmethod` or `@classmethod`: copying it for its
    trampoline would run the decorator again). Their tests may be good or absent; the score cannot
    tell, so the report names them, and a business function keeps its transaction inside (`with
    transaction.atomic():`) rather than on it."""
    tree = ast.parse((repo / module).read_text(encoding="utf-8"))
    found: list[UnmutatedFunction] = []

    def visit(body: Sequence[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list:
                names = [ast.unparse(d) for d in node.decorator_list]
                if names in (["staticmethod"], ["classmethod"]):
                    continue
                end = node.end_lineno or node.lineno
                found.append(
                    UnmutatedFunction(module, prefix + node.name, node.lineno, end - node.lineno + 1, ", ".join(names))
                )

    visit(tree.body, "")
    return found


def time_out_warning(results: Sequence[MutantResult]) -> str | None:
    """What a run with time-outs says about the kills after them. mutmut kills a test process that
    runs too long; what that process left behind (rows a transactional test had committed in the
    reused test database, a server it started) can fail the next mutants' tests whatever their
    mutation, so a kill after a time-out proves nothing until the mutant is rerun by name."""
    timed_out = [r.name for r in results if r.status == "timeout"]
    if not timed_out:
        return None
    killed = sum(r.status == "killed" for r in results)
    return (
        f"{len(timed_out)} mutant(s) timed out ({', '.join(timed_out[:5])}{', ...' if len(timed_out) > 5 else ''}): "
        f"the {killed} killed may include false kills (the next session makes the test database anew, "
        "tests/mutant_sessions.py, but a server or worker the stopped one started may still run); decide them "
        "again by name (--keep, then --by-name KEPT --mutants ...)"
    )


def score(results: Iterable[MutantResult]) -> tuple[int, int]:
    """(killed, killed + not killed): skipped or unchecked mutants count in neither."""
    counts = Counter(
        "killed" if r.status in KILLED_STATUSES else "not" if r.status in NOT_KILLED_STATUSES else "other"
        for r in results
    )
    return counts["killed"], counts["killed"] + counts["not"]


def per_module(results: Sequence[MutantResult], modules: Sequence[str]) -> dict[str, dict[str, object]]:
    table: dict[str, dict[str, object]] = {}
    for module in modules:
        mine = [r for r in results if r.module == module]
        killed, counted = score(mine)
        table[module] = {
            "mutants": len(mine),
            "killed": killed,
            "counted": counted,
            "score": round(100 * killed / counted, 1) if counted else None,
            "statuses": dict(Counter(r.status for r in mine)),
        }
    return table


def markdown(results: Sequence[MutantResult], table: dict[str, dict[str, object]], meta: dict[str, object]) -> str:
    out = ["# Mutation report (mutmut)", "", f"{meta['when']}, {meta['seconds']} s, tests: {meta['tests']}", ""]
    if meta.get("moved_during_run"):
        out += [
            f"The working tree changed during the run; the copy tested was older for: {meta['moved_during_run']}",
            "",
        ]
    if meta.get("time_out_warning"):
        out += [f"**Warning:** {meta['time_out_warning']}", ""]
    out += ["| module | mutants | killed | score |", "|---|---:|---:|---:|"]
    for module, row in table.items():
        shown = "-" if row["score"] is None else f"{row['score']}%"
        out.append(f"| {module} | {row['mutants']} | {row['killed']} of {row['counted']} | {shown} |")
    unmutated = cast(list[dict[str, object]], meta.get("unmutated") or [])
    if unmutated:
        out += ["", "## Not mutated (decorated functions: no score says how well they are tested)", ""]
        out += [
            f"- {f['module']}:{f['line']} {f['function']} ({f['lines']} lines; @{f['decorators']})" for f in unmutated
        ]
    out += ["", "## Not killed", ""]
    for r in results:
        if r.status not in KILLED_STATUSES | {"not checked"}:
            out += [f"### {r.module}:{r.line} {r.function} ({r.status}) `{r.name}`", "", "```diff", r.diff, "```", ""]
    return "\n".join(out) + "\n"


def run_mutmut(
    root: Path,
    python: str,
    max_children: int,
    log: Path,
    time_limit: float | None = None,
    patterns: Sequence[str] = (),
) -> int:
    """mutmut's exit status; past `time_limit` seconds its process group is stopped and the mutants
    checked so far stand (mutmut records each verdict as it goes), the rest "not checked". With
    `patterns`, only the mutants whose names match one of them are run."""
    with log.open("w", encoding="utf-8") as out:
        run = subprocess.Popen(
            [python, "-m", "mutmut", "run", "--max-children", str(max_children), *patterns],
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its forked test processes stop with it
        )
        try:
            return run.wait(timeout=time_limit)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGTERM)
            try:
                return run.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
                return run.wait()


def mutate(
    modules: Sequence[str],
    *,
    repo: Path = REPO,
    tests: Sequence[str] = (),
    python: str | None = None,
    max_children: int = 1,
    report_dir: Path | None = None,
    keep: bool = False,
    time_limit: float | None = None,
    functions: Sequence[str] = (),
    say: Callable[[str], None] = print,
) -> tuple[list[MutantResult], dict[str, dict[str, object]], Path]:
    """Run mutmut on `modules` in a copy of `repo`; the results, the per-module table and the JSON
    report's path."""
    python = python or default_python(repo)
    tests = list(tests) if tests else sorted({t for m in modules for t in candidate_tests(repo, m)})
    report_dir = report_dir or repo / "var" / "mutation"
    report_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="mutate-changed-"))
    try:
        copied = copy_worktree(repo, root)
        write_mutmut_config(root, mutmut_config(root, modules, tests))
        only = f" (functions: {', '.join(functions)})" if functions else ""
        say(f"mutating {', '.join(modules)}{only} in {root}; tests: {', '.join(tests) or 'none found'}")
        log = report_dir / f"mutmut-{stamp}.log"
        code = run_mutmut(root, python, max_children, log, time_limit, mutant_patterns(modules, functions))
        moved = moved_since(repo, copied)
        if moved:
            say(f"the working tree changed during the run, so the run tested an older copy of: {', '.join(moved[:20])}")
        results = collect(root, modules, python)
        if code != 0 and all(r.status == "not checked" for r in results):
            # The tests failed on the unmutated code (or mutmut could not run them): no verdict.
            older = f"; the tree changed meanwhile ({', '.join(moved[:20])}): rerun on a quiet tree" if moved else ""
            raise RuntimeError(f"mutmut exited {code} before any mutant was checked; its output: {log}{older}")
    finally:
        if keep:
            say(f"kept the copy: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    meta: dict[str, object] = {
        "when": stamp,
        "seconds": round(time.monotonic() - started),
        "tests": tests,
        "modules": list(modules),
        "functions": list(functions),
        "moved_during_run": moved,
        "time_out_warning": time_out_warning(results),
        "unmutated": [asdict(f) for m in modules for f in unmutated_functions(repo, m)],
    }
    table, report = write_report(results, modules, meta, report_dir)
    return results, table, report


def write_report(
    results: Sequence[MutantResult], modules: Sequence[str], meta: dict[str, object], report_dir: Path
) -> tuple[dict[str, dict[str, object]], Path]:
    """The per-module table, and the JSON and Markdown reports (the JSON's path)."""
    table = per_module(results, modules)
    report = report_dir / f"mutation-{meta['when']}.json"
    report.write_text(
        json.dumps({**meta, "per_module": table, "mutants": [asdict(r) for r in results]}, indent=1), encoding="utf-8"
    )
    report.with_suffix(".md").write_text(markdown(results, table, meta), encoding="utf-8")
    return table, report


# A verdict of scripts/mutants_by_name.py as mutmut's exit code in a module's .meta; "suspect" has
# none: the mutant keeps the verdict it had.
EXIT_CODE_BY_NAME_VERDICT = {"killed": 1, "survived": 0, "no tests": 33, "timeout": 36}


def mutated_modules(root: Path) -> list[str]:
    """The modules a kept copy's run mutated (its `[tool.mutmut]` only_mutate)."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    return list(config["only_mutate"])


def undecided_mutants(root: Path, modules: Sequence[str], functions: Sequence[str] = ()) -> list[str]:
    """The mutants of `modules` (of `functions` only, if named) that a kept copy's run did not kill:
    survived, no tests, not checked, and timed out (a time-out counts as killed, but what the
    stopped session left can fail the next mutants' tests, so it is decided again)."""
    patterns = mutant_patterns(modules, functions)
    names = []
    for module in modules:
        meta = root / "mutants" / f"{module}.meta"
        if not meta.is_file():
            continue
        for name, code in json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"].items():
            status = "not checked" if code is None else STATUS_BY_EXIT_CODE.get(code, "suspicious")
            if status in KILLED_STATUSES - {"timeout"}:
                continue
            if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
                continue
            names.append(name)
    return names


def by_name_plan(root: Path, names: Sequence[str], tests: Sequence[str]) -> dict[str, list[str] | None]:
    """Each mutant's tests: every test of `tests` (None: all the session collects), else those mutmut's
    stats run saw calling the mutant's function."""
    if tests:
        return dict.fromkeys(names)
    stats = root / "mutants" / "mutmut-stats.json"
    if not stats.is_file():
        raise RuntimeError(f"{stats} is missing: name --tests, or run mutmut on this copy first")
    calls = json.loads(stats.read_text(encoding="utf-8"))["tests_by_mangled_function_name"]
    return {name: sorted(calls.get(name.partition("__mutmut_")[0], [])) for name in names}


def by_name(
    root: Path,
    *,
    modules: Sequence[str] = (),
    functions: Sequence[str] = (),
    names: Sequence[str] = (),
    tests: Sequence[str] = (),
    python: str | None = None,
    mutant_seconds: float = 300,
    time_limit: float | None = None,
    report_dir: Path | None = None,
    say: Callable[[str], None] = print,
) -> tuple[list[MutantResult], dict[str, dict[str, object]], Path, dict[str, dict[str, object]]]:
    """Decide mutants of a kept copy (`--keep`) again, one after another by name in one pytest
    session (scripts/mutants_by_name.py): `names`, else every mutant of `modules` (of `functions`)
    not yet killed; each on `tests`, else on the tests that called its function. The verdicts go into
    the copy's .meta files (a suspect keeps its old one); returns the results of the whole modules,
    their table, the report's path and the verdicts of this run."""
    python = python or default_python(root)
    modules = list(modules) or mutated_modules(root)
    report_dir = report_dir or REPO / "var" / "mutation"
    report_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    started = time.monotonic()
    chosen = list(names) or undecided_mutants(root, modules, functions)
    plan = by_name_plan(root, chosen, tests)
    files = list(tests) or sorted({i.split("::")[0] for ids in plan.values() for i in ids or ()})
    here = root / "mutants"
    verdicts: dict[str, dict[str, object]] = {}
    if files:
        shutil.copy(Path(__file__).with_name("mutants_by_name.py"), here / "mutants_by_name.py")
        plan_file = here / "by-name-plan.json"
        results_file = here / "by-name-results.json"
        results_file.unlink(missing_ok=True)
        plan_file.write_text(json.dumps({"mutants": plan, "mutant_seconds": mutant_seconds}), encoding="utf-8")
        config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
        extra = [str(arg) for arg in config.get("pytest_add_cli_args", [])]
        env = {
            **os.environ,
            "MUTANTS_BY_NAME_PLAN": str(plan_file),
            "MUTANTS_BY_NAME_RESULTS": str(results_file),
            "MUTANT_UNDER_TEST": "",
        }
        say(f"{len(plan)} mutant(s) by name in {here}; tests: {', '.join(files)}")
        log = report_dir / f"by-name-{stamp}.log"
        with log.open("w", encoding="utf-8") as out:
            run = subprocess.Popen(
                [python, "-m", "pytest", "-p", "mutants_by_name", *extra, "-q", *files],
                cwd=here,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                run.wait(timeout=time_limit)
            except subprocess.TimeoutExpired:
                os.killpg(run.pid, signal.SIGKILL)
                run.wait()
        if results_file.is_file():
            verdicts = json.loads(results_file.read_text(encoding="utf-8"))
        if not verdicts and plan:
            raise RuntimeError(f"no mutant was decided; the session's output: {log}")
    verdicts |= {name: {"status": "no tests", "test": None} for name, ids in plan.items() if ids == []}
    record_verdicts(root, modules, verdicts)
    results = collect(root, modules, python)
    suspects = sorted(name for name, verdict in verdicts.items() if verdict["status"] == "suspect")
    meta: dict[str, object] = {
        "when": stamp,
        "seconds": round(time.monotonic() - started),
        "tests": list(tests) or "the tests mutmut's stats saw calling each function",
        "modules": modules,
        "functions": list(functions),
        "by_name": len(verdicts),
        "suspects": suspects,
        "time_out_warning": None,
        "unmutated": [],
    }
    table, report = write_report(results, modules, meta, report_dir)
    return results, table, report, verdicts


def record_verdicts(root: Path, modules: Sequence[str], verdicts: dict[str, dict[str, object]]) -> None:
    """Write the decided verdicts into the copy's .meta files, as mutmut's exit codes."""
    for module in modules:
        meta = root / "mutants" / f"{module}.meta"
        if not meta.is_file():
            continue
        data = json.loads(meta.read_text(encoding="utf-8"))
        codes = data["exit_code_by_key"]
        for name, verdict in verdicts.items():
            code = EXIT_CODE_BY_NAME_VERDICT.get(str(verdict["status"]))
            if name in codes and code is not None:
                codes[name] = code
        meta.write_text(json.dumps(data), encoding="utf-8")


def default_python(repo: Path = REPO) -> str:
    venv = repo / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="main", help="the branch to diff against (default main)")
    parser.add_argument("--modules", nargs="+", help="mutate these source modules instead of the changed ones")
    parser.add_argument(
        "--tests", nargs="+", default=[], help="run these test files or node ids instead of those found"
    )
    parser.add_argument(
        "--functions",
        nargs="+",
        default=[],
        help="only the mutants of these functions (name, or Class.method); the others: not checked",
    )
    parser.add_argument("--max-children", type=int, default=1, help="mutants at once (each needs its own database)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary copy (mutmut browse works there)")
    parser.add_argument(
        "--minutes",
        type=float,
        help="stop after this long and report the mutants checked by then (the rest: not checked)",
    )
    parser.add_argument("--list", action="store_true", help="only print the modules and their tests")
    parser.add_argument(
        "--by-name",
        metavar="KEPT",
        type=Path,
        help="decide again, one by one in one test session, the mutants a kept copy (--keep) did not kill",
    )
    parser.add_argument("--mutants", nargs="+", default=[], help="with --by-name: these mutants (mutmut's names)")
    parser.add_argument(
        "--mutant-seconds", type=float, default=300, help="with --by-name: a mutant's time limit (a time-out)"
    )
    args = parser.parse_args(argv)
    if args.by_name:
        return main_by_name(args)
    modules = args.modules or changed_modules(REPO, args.base)
    for module in modules:
        if not is_source_module(REPO, module):
            parser.error(f"{module} is not a source module of an app package")
    if not modules:
        print(f"no source module changed against {args.base}")
        return 0
    if args.list:
        for module in modules:
            print(module, *candidate_tests(REPO, module), sep="\n    ")
        return 0
    results, table, report = mutate(
        modules,
        tests=args.tests,
        max_children=args.max_children,
        keep=args.keep,
        time_limit=args.minutes * 60 if args.minutes else None,
        functions=args.functions,
    )
    for r in results:
        if r.status not in KILLED_STATUSES | {"not checked"}:
            print(f"\n{r.module}:{r.line} {r.function}: {r.status} ({r.name})\n{r.diff}")
    print()
    print_table(table)
    for module in modules:
        for f in unmutated_functions(REPO, module):
            print(f"{module}:{f.line} {f.function}: not mutated ({f.lines} lines; decorated with @{f.decorators})")
    warning = time_out_warning(results)
    if warning:
        print(f"warning: {warning}")
    print(f"report: {report} and {report.with_suffix('.md')}")
    return 0 if all(r.status in KILLED_STATUSES for r in results) else 1


def print_table(table: dict[str, dict[str, object]]) -> None:
    for module, row in table.items():
        shown = "-" if row["score"] is None else f"{row['score']}%"
        print(f"{module}: {row['killed']} of {row['counted']} killed ({shown}); {row['statuses']}")


def main_by_name(args: argparse.Namespace) -> int:
    results, table, report, verdicts = by_name(
        args.by_name,
        modules=args.modules or (),
        functions=args.functions,
        names=args.mutants,
        tests=args.tests,
        mutant_seconds=args.mutant_seconds,
        time_limit=args.minutes * 60 if args.minutes else None,
    )
    decided = set(verdicts)
    for r in results:
        if r.name in decided and r.status not in KILLED_STATUSES:
            print(f"\n{r.module}:{r.line} {r.function}: {r.status} ({r.name})\n{r.diff}")
    print()
    print(f"by name: {dict(Counter(str(v['status']) for v in verdicts.values()))}")
    for name, verdict in verdicts.items():
        if verdict["status"] == "suspect":
            print(f"suspect (its test {verdict['test']} fails without the mutant too): {name}")
    print_table(table)
    print(f"report: {report} and {report.with_suffix('.md')}")
    return 0 if all(v["status"] in {"killed", "timeout"} for v in verdicts.values()) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
