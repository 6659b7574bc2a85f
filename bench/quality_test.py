"""Simulations of the quality test: does it hold rule-based labellers within a few
batches, and how often does it hold honest workers?

    .venv/bin/python bench/quality_test.py [--workers 2000] [--seed 20261126] [--quiz 0 20 30]

Items are real SNLI dev pairs (`/work/shared/data/snli_1.0_dev.jsonl`, or NLI_SHARED_DATA; those
with a gold label); each is weighed, as the platform weighs a validation label, against the label
its pair was written for (SNLI's first annotator, its author), and a catch trial (10% of places)
against the gold label. A simulated honest worker at accuracy a gives the gold label with
probability a, else one of the two others at random; the rule labeller gives
`bench/attacks/_rule_labeller.rule_label` (0.515 against gold); a uniform clicker a random label.
A session is six batches of five (the attack studies' size); a worker does up to four sessions,
each on new pairs, and the study asks at each session's end (the completion hold), with the
chance test and the quality test both as `quality.guessers.hold_code_of_guesser` applies them.
"Fast" bots submit at 0.3 s an item (1.5 s a batch: far too fast to read), the "fast reader"
honest worker at 3 s an item (too fast by the workers page's 4 s rule): the speed evidence counts.

The pay rule has three outcomes (`sequential.QualityResult.outcome`): poor (held), undecided leaning to
poor (P(poor) at least `sequential.PAY_POSTERIOR_POOR`: held for review, not paid) and acceptable (paid).
`--sweep` prints the share held after session 1 at each threshold (0.9: held only when decided
poor, the rule before).

Printed: per kind of worker the share held at the end of the first session and within four, with
95% Wilson intervals over the simulated workers, and for the held, the labels to the first batch
after which the test would hold (the median, and the 90th percentile); then the false-hold rate
the study form shows for the default levels (an honest worker exactly at 75%, no speed evidence).

`--quiz N [N ...]`: the table once per quiz size, each worker first answering a qualification test of
N items (further SNLI dev pairs, each weighed against its gold label as `quality.selectors` weighs a
qualification answer against the researchers' label; no times, so no speed evidence) before the
first batch. 0 is no qualification test. The pass mark is left out: every worker goes on to the
study whatever their score, so the figures are the quiz's evidence alone (a pass mark of 0.8 would
also keep most rule labellers, and many honest 75% workers, out of the study).
"""

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.attacks._rule_labeller import rule_label  # noqa: E402
from quality import sequential  # noqa: E402

DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"
LABELS = ("entailment", "neutral", "contradiction")
BATCH, BATCHES, SESSIONS = 5, 6, 4
CATCH_SHARE = 0.1
SLOW_SECONDS = 6.0


def snli_items() -> list[dict]:
    items = []
    with DATA.open() as lines:
        for line in lines:
            row = json.loads(line)
            written = row["annotator_labels"][0]
            if row["gold_label"] in LABELS and written in LABELS:
                rule = rule_label(row["sentence1"], row["sentence2"])
                items.append({"gold": row["gold_label"], "written": written, "rule": rule})
    return items


# The first session's own test (`guessers.FIRST_SESSION_LEVELS`): a reader of a third of the items
# (about 62% right) against an honest validator (85-89%).
FIRST_LEVELS = (0.65, 0.85)
READER_ACCURACY = 0.86  # what a reader answers on the items they read (SNLI's validators: 85-89%)


def answer(kind: str, accuracy: float, item: dict, rng: random.Random) -> str:
    if kind == "rule":
        return item["rule"]
    if kind == "reader":  # reads `accuracy` of the items (answering as an honest validator), rules the rest
        if rng.random() >= accuracy:
            return item["rule"]
        kind, accuracy = "honest", READER_ACCURACY
    if kind == "clicker":
        return rng.choice(LABELS)
    if rng.random() < accuracy:
        return item["gold"]
    return rng.choice([label for label in LABELS if label != item["gold"]])


class Evidence:
    """A worker's strata as `quality.selectors` tallies them: written labels and catch trials."""

    def __init__(self) -> None:
        self.tallies: dict[str, tuple[dict[str, int], dict[str, int], list[int]]] = {
            "written": ({}, {}, [0]),
            "catch": ({}, {}, [0]),
            "qualification": ({}, {}, [0]),
        }
        self.seconds: list[float] = []

    def add(self, source: str, own: str, reference: str, seconds: float | None) -> None:
        mine, theirs, agreements = self.tallies[source]
        mine[own] = mine.get(own, 0) + 1
        theirs[reference] = theirs.get(reference, 0) + 1
        agreements[0] += own == reference
        if seconds is not None:
            self.seconds.append(seconds)

    def holds(self, first_pay_below: float | None = None) -> tuple[bool, bool]:
        """(held by the chance test, held by the quality test); `first_pay_below`: the first session's
        rule (`guessers.FIRST_SESSION_PAY_BELOW`), paid only while P(poor) is below it, else deferred."""
        chance = sequential.combined_sequential_test(
            sequential.Stratum(own=mine, reference=theirs, agreements=agreements[0])
            for mine, theirs, agreements in self.tallies.values()
        )
        quality = sequential.sequential_quality_test(
            (
                sequential.QualityStratum(
                    own=mine,
                    reference=theirs,
                    agreements=agreements[0],
                    reference_accuracy=sequential.REFERENCE_ACCURACY[source],
                )
                for source, (mine, theirs, agreements) in self.tallies.items()
            ),
            timed_items=len(self.seconds),
            median_seconds=statistics.median(self.seconds) if self.seconds else None,
        )
        if first_pay_below is not None:
            first = sequential.sequential_quality_test(
                (
                    sequential.QualityStratum(
                        own=mine,
                        reference=theirs,
                        agreements=agreements[0],
                        reference_accuracy=sequential.REFERENCE_ACCURACY[source],
                    )
                    for source, (mine, theirs, agreements) in self.tallies.items()
                ),
                poor=FIRST_LEVELS[0],
                acceptable=FIRST_LEVELS[1],
                timed_items=len(self.seconds),
                median_seconds=statistics.median(self.seconds) if self.seconds else None,
            )
            return chance.holds_code, quality.holds_code or first.posterior_poor >= first_pay_below
        return chance.holds_code, quality.holds_code


def simulate(
    kind: str,
    accuracy: float,
    seconds: float,
    items: list[dict],
    rng: random.Random,
    quiz: int = 0,
    first_pay_below: float | None = None,
) -> dict:
    """One worker through a qualification test of `quiz` items, then up to SESSIONS sessions: held
    at which session's end (or never), and the labels after which a hold would first have come
    (checked after every batch; quiz answers not counted among the labels)."""
    evidence = Evidence()
    first_deferred = False
    first_hold_labels = None
    held_session = None
    held_by = None
    order = rng.sample(range(len(items)), quiz + SESSIONS * BATCHES * BATCH)
    for place in order[:quiz]:
        evidence.add("qualification", answer(kind, accuracy, items[place], rng), items[place]["gold"], None)
    order = order[quiz:]
    place = 0
    for session in range(1, SESSIONS + 1):
        for _ in range(BATCHES):
            for _ in range(BATCH):
                item = items[order[place]]
                place += 1
                own = answer(kind, accuracy, item, rng)
                if rng.random() < CATCH_SHARE:
                    evidence.add("catch", own, item["gold"], seconds)
                else:
                    evidence.add("written", own, item["written"], seconds)
            if first_hold_labels is None and any(evidence.holds()):
                first_hold_labels = place
        chance, quality = evidence.holds(first_pay_below if session == 1 else None)
        if session == 1 and first_pay_below is not None:
            deferred = chance or quality
            if deferred and not any(evidence.holds()):
                # Deferred, not decided: the second session's evidence decides under the usual rule.
                first_deferred = True
                continue
        if chance or quality:
            held_session = session
            held_by = "quality" if quality else "chance"
            break
    return {
        "held_session": held_session,
        "first_deferred": first_deferred,
        "held_by": held_by,
        "first_hold_labels": first_hold_labels,
    }


def wilson(successes: int, tries: int, z: float = 1.96) -> str:
    share = successes / tries
    centre = (share + z * z / (2 * tries)) / (1 + z * z / tries)
    half = z * (share * (1 - share) / tries + z * z / (4 * tries * tries)) ** 0.5 / (1 + z * z / tries)
    return f"{share:.4f} [{max(0.0, centre - half):.4f}, {min(1.0, centre + half):.4f}]"


KINDS = [
    ("rule labeller, human pace", "rule", 0.0, SLOW_SECONDS),
    ("rule labeller, 1.5 s a batch", "rule", 0.0, 0.3),
    ("uniform clicker", "clicker", 1 / 3, SLOW_SECONDS),
    ("honest 75%", "honest", 0.75, SLOW_SECONDS),
    ("honest 80%", "honest", 0.80, SLOW_SECONDS),
    ("honest 90%", "honest", 0.90, SLOW_SECONDS),
    ("honest 75%, fast reader", "honest", 0.75, 3.0),
    ("honest 80%, fast reader", "honest", 0.80, 3.0),
    ("honest 75%, slow reader", "honest", 0.75, 15.0),
    ("honest 85%", "honest", 0.85, SLOW_SECONDS),
    ("honest 87%", "honest", 0.87, SLOW_SECONDS),
    ("reads 30%, rule the rest", "reader", 0.30, SLOW_SECONDS),
    ("reads 50%, rule the rest", "reader", 0.50, SLOW_SECONDS),
]
# The pay rule's threshold swept (`sequential.PAY_POSTERIOR_POOR`: a code is paid only while P(poor) is
# below it); 0.9 holds a code only when decided poor.
SWEEP = (0.9, 0.8, 0.7, 0.6, 0.5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=20261126)
    parser.add_argument(
        "--sweep", action="store_true", help="also the held share after session 1 at each pay threshold"
    )
    parser.add_argument(
        "--quiz",
        type=int,
        nargs="+",
        default=[0],
        metavar="N",
        help="qualification-test items answered before the first batch (one table per size; 0: none)",
    )
    parser.add_argument(
        "--first-pay",
        type=float,
        nargs="+",
        default=[],
        metavar="P",
        help="also the first session paid only while P(poor) < P, else deferred to the second (one table each)",
    )
    args = parser.parse_args(argv)
    items = snli_items()
    rule_accuracy = sum(item["rule"] == item["gold"] for item in items) / len(items)
    written_accuracy = sum(item["written"] == item["gold"] for item in items) / len(items)
    print(
        f"{len(items)} SNLI dev pairs; rule labeller right {rule_accuracy:.3f}; written label = gold {written_accuracy:.3f}"
    )
    print(
        f"levels: poor {sequential.DEFAULT_POOR_ACCURACY}, acceptable {sequential.DEFAULT_ACCEPTABLE_ACCURACY}; "
        f"sessions of {BATCHES}x{BATCH}; {args.workers} workers a kind; seed {args.seed}\n"
    )
    print(
        f"pay rule: paid while P(poor) < {sequential.PAY_POSTERIOR_POOR}, held as poor from {sequential.HOLD_POSTERIOR_POOR}\n"
    )
    header = f"{'worker':30} {'held after session 1':28} {'held within 4 sessions':28} {'by quality':>10} {'labels to hold: median, p90':>28}"
    for quiz in args.quiz:
        print(f"qualification test of {quiz} items before the first batch" if quiz else "no qualification test")
        print(header)
        for name, kind, accuracy, seconds in KINDS:
            rng = random.Random(f"{args.seed}-{name}")
            runs = [simulate(kind, accuracy, seconds, items, rng, quiz) for _ in range(args.workers)]
            first = sum(run["held_session"] == 1 for run in runs)
            ever = sum(run["held_session"] is not None for run in runs)
            by_quality = sum(run["held_by"] == "quality" for run in runs)
            to_hold = sorted(run["first_hold_labels"] for run in runs if run["first_hold_labels"] is not None)
            labels = f"{to_hold[(len(to_hold) - 1) // 2]}, {to_hold[int(0.9 * (len(to_hold) - 1))]}" if to_hold else "-"
            print(
                f"{name:30} {wilson(first, args.workers):28} {wilson(ever, args.workers):28} {by_quality:>10} {labels:>28}"
            )
        print()
    for below in args.first_pay:
        first_session_table(args, items, below)
    if args.sweep:
        sweep(args)
    print("\nfalse-hold rate of the default levels for an honest worker at exactly 75% (the study form's figure):")
    for n in (30, 60, 120, 240):
        rate = sequential.false_hold_rate(sequential.DEFAULT_POOR_ACCURACY, sequential.DEFAULT_ACCEPTABLE_ACCURACY, n)
        print(f"  after {n} labels: {rate:.4f}")


def first_session_table(args: argparse.Namespace, items: list[dict], below: float) -> None:
    """Unpaid at the first session's end (held, or deferred: P(poor) at least `below`), decided held
    within four sessions (the deferral resolved by the usual rule from the second session on), and
    deferred then paid."""
    for quiz in args.quiz:
        print(f"first session paid only while P(poor) < {below}; quiz of {quiz} items")
        print(f"{'worker':30} {'unpaid after session 1':28} {'held within 4 sessions':28} {'deferred, then paid':>20}")
        for name, kind, accuracy, seconds in KINDS:
            rng = random.Random(f"{args.seed}-{name}")
            runs = [simulate(kind, accuracy, seconds, items, rng, quiz, below) for _ in range(args.workers)]
            unpaid = sum(run["held_session"] == 1 or run["first_deferred"] for run in runs)
            ever = sum(run["held_session"] is not None for run in runs)
            deferred_paid = sum(run["first_deferred"] and run["held_session"] is None for run in runs)
            print(f"{name:30} {wilson(unpaid, args.workers):28} {wilson(ever, args.workers):28} {deferred_paid:>20}")
        print()


def sweep(args: argparse.Namespace) -> None:
    """Held after session 1 at each pay threshold, every kind (the same seeds as the table)."""
    items = snli_items()
    shipped = sequential.PAY_POSTERIOR_POOR
    print("\nheld after session 1 by pay threshold (paid while P(poor) is below it):")
    for threshold in SWEEP:
        sequential.PAY_POSTERIOR_POOR = threshold
        for quiz in args.quiz:
            for name, kind, accuracy, seconds in KINDS:
                rng = random.Random(f"{args.seed}-{name}")
                runs = [simulate(kind, accuracy, seconds, items, rng, quiz) for _ in range(args.workers)]
                first = sum(run["held_session"] == 1 for run in runs)
                print(f"  {threshold:.1f}  quiz {quiz:3}  {name:30} {wilson(first, args.workers)}")
    sequential.PAY_POSTERIOR_POOR = shipped


if __name__ == "__main__":
    main()
