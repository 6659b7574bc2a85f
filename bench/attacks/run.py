"""Run the standing attack suite against a running server and print one row per attack.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8000 \\
        [--only order_bot] [--seed 0] [--json results.json]

Every module of this package (but this runner and those whose names start with "_") is an attack:
module constants NAME and CLAIM and `run(base_url, *, seed=0) -> dict` (docs/quality.md, "The
attack suite"). An attack that raises is reported as an error row; the others still run. DATABASE_URL
(and the server's other settings) must name the server's own database: attacks build their study or
accounts there and judge their result from it. Exits 1 when any attack beat chance or failed.
"""

import argparse
import importlib
import json
import pkgutil
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
COLUMNS = ("attack", "tries", "succeeded", "measure", "value", "interval", "at chance/refused")


def attack_modules() -> list[str]:
    """The attack modules' names, sorted: every module of the package but the runner and helpers."""
    return sorted(
        info.name for info in pkgutil.iter_modules([str(HERE)]) if info.name != "run" and not info.name.startswith("_")
    )


def run_one(module_name: str, base_url: str, seed: int) -> dict:
    """One attack's row; an attack that cannot be imported or raises is an error row."""
    started = time.monotonic()
    try:
        module = importlib.import_module(f"bench.attacks.{module_name}")
        result = dict(module.run(base_url, seed=seed))
        result.setdefault("attack", getattr(module, "NAME", module_name))
        result["claim"] = getattr(module, "CLAIM", "")
    except Exception as error:  # one attack's failure must not stop the suite
        result = {
            "attack": module_name,
            "tries": 0,
            "succeeded": 0,
            "measure": "error",
            "value": None,
            "interval": None,
            "at_chance_or_refused": False,
            "detail": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(),
        }
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def _cell(row: dict, column: str) -> str:
    if column == "at chance/refused":
        return "yes" if row.get("at_chance_or_refused") else ("ERROR" if row.get("measure") == "error" else "NO")
    value = row.get(column)
    if column == "interval" and value:
        return f"[{value[0]:.3f}, {value[1]:.3f}]"
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)


def table(rows: list[dict]) -> str:
    cells = [list(COLUMNS)] + [[_cell(row, column) for column in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    for row in rows:
        lines.append(f"{row['attack']}: {row.get('detail', '')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--only", action="append", help="run only this attack (repeatable)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the rows to this file as JSON")
    args = parser.parse_args(argv)
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    names = attack_modules()
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"no such attack: {', '.join(unknown)} (there are: {', '.join(names)})")
        names = [name for name in names if name in args.only]
    rows = []
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows.append(run_one(name, args.base_url, args.seed))
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2, default=str) + "\n")
    return 0 if all(row.get("at_chance_or_refused") for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
