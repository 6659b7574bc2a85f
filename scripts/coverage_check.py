"""Coverage of one CI pass against its floor in coverage-floor.json: the floor can only rise.

    python scripts/coverage_check.py [PASS]            print line and branch coverage (total and per
                                                       app); exit 1 if either is below PASS's floor
    python scripts/coverage_check.py [PASS] --summary  print them only (what `make test` shows)
    python scripts/coverage_check.py [PASS] --raise    set PASS's floors to this run's figures where
                                                       they are higher (never lower); commit the file

PASS is a key of coverage-floor.json: `postgresql`, CI's one pass (docs/checks.md), by default.
The figures come from the JSON report that `make test` writes (var/coverage/coverage.json, `coverage json`); docs/checks.md
explains.
"""

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLOOR_FILE = REPO / "coverage-floor.json"
REPORT_FILE = REPO / "var" / "coverage" / "coverage.json"
# A floor is stored with one decimal, rounded down, so that the run that set it passes it.
DECIMALS = 1


def percent(covered, total):
    return 100.0 * covered / total if total else 100.0


def figures(report):
    """{"line": %, "branch": %} over the whole report."""
    totals = report["totals"]
    return {
        "line": percent(totals["covered_lines"], totals["num_statements"]),
        "branch": percent(totals["covered_branches"], totals.get("num_branches", 0)),
    }


def per_app(report):
    """{app: {"line": %, "branch": %}} from the report's files (the first folder of each path)."""
    sums: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for path, data in report["files"].items():
        summary = data["summary"]
        row = sums[Path(path).parts[0]]
        row[0] += summary["covered_lines"]
        row[1] += summary["num_statements"]
        row[2] += summary.get("covered_branches", 0)
        row[3] += summary.get("num_branches", 0)
    return {app: {"line": percent(a, b), "branch": percent(c, d)} for app, (a, b, c, d) in sorted(sums.items())}


def round_down(value):
    factor = 10**DECIMALS
    return math.floor(value * factor) / factor


def check(current, floor):
    """The kinds ("line", "branch") whose coverage is below the floor."""
    return [kind for kind in ("line", "branch") if current[kind] < floor.get(kind, 0.0)]


def raised(current, floor):
    """The floor after a run: each figure rounded down, never lower than before."""
    return {kind: max(floor.get(kind, 0.0), round_down(current[kind])) for kind in ("line", "branch")}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "pass_name",
        metavar="PASS",
        nargs="?",
        default="postgresql",
        help="a key of the floor file (default: %(default)s, CI's one pass)",
    )
    parser.add_argument("--summary", action="store_true", help="print the figures, check nothing")
    parser.add_argument("--raise", dest="raise_floor", action="store_true", help="raise PASS's floor to this run")
    parser.add_argument("--report", type=Path, default=REPORT_FILE, help="coverage JSON report (coverage json)")
    parser.add_argument("--floors", type=Path, default=FLOOR_FILE, help="the floor file")
    args = parser.parse_args(argv)

    if not args.report.exists():
        print(f"no coverage report at {args.report}: run the suite with `make test` first", file=sys.stderr)
        return 2
    report = json.loads(args.report.read_text())
    floors = json.loads(args.floors.read_text())
    if args.pass_name not in floors and not args.summary:
        print(f"{args.floors.name} has no pass {args.pass_name!r} (it has {', '.join(floors)})", file=sys.stderr)
        return 2
    # A pass with no floor (a run of some tests, named as you like) is still summarised.
    current, floor = figures(report), floors.get(args.pass_name, {})

    print(f"coverage by app ({args.pass_name} pass):")
    for app, row in per_app(report).items():
        print(f"  {app:<16} line {row['line']:5.1f}%   branch {row['branch']:5.1f}%")
    print(
        f"coverage, {args.pass_name} pass: line {current['line']:.1f}% (floor {floor.get('line', 0.0):.1f}%), "
        f"branch {current['branch']:.1f}% (floor {floor.get('branch', 0.0):.1f}%)"
    )

    if args.summary:
        return 0
    if args.raise_floor:
        new = raised(current, floor)
        if new != floor:
            floors[args.pass_name] = new
            args.floors.write_text(json.dumps(floors, indent=2) + "\n")
            print(f"{args.floors.name}: {args.pass_name} floor is now line {new['line']}%, branch {new['branch']}%")
        else:
            print(f"{args.floors.name}: {args.pass_name} floor unchanged (this run is not above it)")
        return 0

    below = check(current, floor)
    if below:
        print(
            f"coverage of the {args.pass_name} pass fell below its floor ({', '.join(below)}): "
            "add tests for the code you changed (docs/checks.md)",
            file=sys.stderr,
        )
        return 1
    if raised(current, floor) != floor:
        print(f"  (above the floor: `python scripts/coverage_check.py {args.pass_name} --raise` records it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
