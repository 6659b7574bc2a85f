"""How often would an honest writer's completion code be held for shape refusals, and how often is
a real hypothesis refused in another honest corpus (collection/shape_holds.py)?

    .venv/bin/python bench/shape_holds.py [--data ../shared/data]

Honest writers are simulated by SNLI dev's real hypotheses: SNLI's three hypotheses of a caption
were written by one worker, so a writing task is one caption's hypotheses (as its pairs come in the
file), and a session is `tasks` tasks in a row. Each of its hypotheses the shape check refuses is
one refusal (the writer then rewrites it and the rewrite is accepted, as most are: 0.3% refused),
and the session's sent hypotheses are its accepted ones plus its refusals. A session is held when
`collection.sentence_shape.held_for_shape(refused, sent)` says so. An adversarial session sends one
hypothesis a try and up to three tries a task: the same arithmetic on 3 hypotheses a task, so the
writing simulation covers it.

DNC (Poliak et al. 2018): the recast hypotheses of every `*_data.json` under dnc/ (dev, train,
function words), each distinct hypothesis once, as another honest corpus (templates, not crowd
writing, so its rate is a bound from another kind of English). MultiNLI is not on this machine.
"""

import argparse
import json
import os
import sys
from collections import Counter
from itertools import groupby
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collection.sentence_shape import SHAPE_HOLD_MIN_REFUSALS, SHAPE_HOLD_SHARE, held_for_shape, shapes, verdict

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
SESSION_TASKS = (1, 2, 5, 10, 20, 50)


def snli_tasks(data: Path) -> list[list[bool]]:
    """One list per caption (a writing task): whether each of its hypotheses is refused for shape."""
    rows = [json.loads(line) for line in (data / "snli_1.0_dev.jsonl").open(encoding="utf-8")]
    # A warning counts as a refusal does: both are the session's shape flags.
    refused = [verdict(shape) is not None for shape in shapes([row["sentence2"] for row in rows])]
    return [
        [refused[index] for index, _ in group]
        for _, group in groupby(enumerate(rows), key=lambda pair: pair[1]["captionID"])
    ]


def held_sessions(tasks: list[list[bool]], per_session: int) -> tuple[int, int, Counter[int]]:
    """(sessions, held, sessions by their count of refusals) for sessions of `per_session` tasks."""
    sessions = [tasks[start : start + per_session] for start in range(0, len(tasks) - per_session + 1, per_session)]
    held, by_refusals = 0, Counter[int]()
    for session in sessions:
        refused = sum(sum(task) for task in session)
        sent = sum(len(task) for task in session) + refused
        by_refusals[refused] += 1
        held += held_for_shape(refused, sent)
    return len(sessions), held, by_refusals


def dnc_sets(data: Path) -> dict[str, list[str]]:
    sets: dict[str, list[str]] = {}
    for path in sorted((data / "dnc").rglob("*_data.json")):
        hypotheses = dict.fromkeys(row["hypothesis"] for row in json.loads(path.read_text(encoding="utf-8")))
        sets[str(path.relative_to(data / "dnc"))] = list(hypotheses)
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    args = parser.parse_args()

    print(
        f"Held at >= {SHAPE_HOLD_MIN_REFUSALS} shape refusals and >= {SHAPE_HOLD_SHARE:.0%} of the hypotheses sent.\n"
    )
    tasks = snli_tasks(args.data)
    hypotheses, refused = sum(map(len, tasks)), sum(map(sum, tasks))
    print(f"SNLI dev: {len(tasks)} captions, {hypotheses} hypotheses, {refused} refused ({refused / hypotheses:.2%})")
    print(f"{'tasks a session':>16}{'sessions':>10}{'held':>6}{'rate':>9}   sessions by refusals")
    for per_session in SESSION_TASKS:
        sessions, held, by_refusals = held_sessions(tasks, per_session)
        spread = ", ".join(f"{count}: {n}" for count, n in sorted(by_refusals.items()))
        print(f"{per_session:>16}{sessions:>10}{held:>6}{held / sessions:>9.3%}   {spread}")

    print("\nDNC recast hypotheses (each distinct hypothesis once; MultiNLI is not on this machine):")
    print(f"{'file':<48}{'hypotheses':>11}{'flagged':>9}{'rate':>9}")  # refused or warned
    total = total_refused = 0
    for name, texts in dnc_sets(args.data).items():
        stopped = sum(1 for shape in shapes(texts) if verdict(shape) is not None)
        total, total_refused = total + len(texts), total_refused + stopped
        print(f"{name:<48}{len(texts):>11}{stopped:>9}{stopped / len(texts):>9.2%}")
    print(f"{'all':<48}{total:>11}{total_refused:>9}{total_refused / total:>9.2%}")


if __name__ == "__main__":
    main()
