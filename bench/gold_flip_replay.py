"""Gold that flips silently under rule-based bots, before and after the correlated-error check.

    .venv/bin/python bench/gold_flip_replay.py [FILE] [--rates 0.1 0.2 0.3] [--seeds 10] [--honest 100] [--bots 10]
        [--uniform] [--noise 0.3] [--copies 1]

FILE: SNLI-style JSON lines with five `annotator_labels` per pair (default
$NLI_SHARED_DATA/snli_1.0_dev.jsonl; pairs with fewer than five labels are left out). The file has
no worker ids, so each pair's five real labels are given to five distinct ids drawn at random from
`--honest` honest workers. Then each validation label (positions 2-5; the author's stays the
author's) is replaced, with probability `rate`, by a bot's label:
`bench.attacks._rule_labeller.rule_label` on the pair, under an id drawn from `--bots` bot ids
not already on the pair (every bot shares the rule; with `--uniform` each guesses uniformly at
random instead: independent errors, the control; with `--noise P` each bot label is a uniform guess
with probability P, the rule's otherwise: noise that hides the shared rule). Per rate and seed:

- gold changed: the 3-of-5 gold of the replayed labels differs from the real labels' gold;
- silently switched: both are labels and differ ("-" shows itself);
- after: the same, leaving out the pairs the platform routes to adjudication, found by the
  platform's own functions on the replayed label table (`quality.correlated.find_correlated_groups`
  and `gold_at_risk`, as `quality.correlated_runs` calls them inside an aggregation run);
- routed: pairs sent to adjudication; false groups: honest ids that fell into a group.

No database; tests/quality/test_correlated_errors.py plays a slice through it.
"""

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from bench.attacks._rule_labeller import rule_label  # noqa: E402
from corpus.gold import gold_label  # noqa: E402
from corpus.labels import LABELS, NO_GOLD  # noqa: E402
from quality.correlated import find_correlated_groups, gold_at_risk  # noqa: E402

HONEST_PREFIX, BOT_PREFIX = "honest-", "bot-"
LABELS_PER_PAIR = 5


@dataclass(frozen=True)
class ReplayPair:
    pair_id: str
    labels: tuple[str, ...]  # the real annotators' five labels
    rule: str  # what every bot answers


@dataclass(frozen=True)
class ReplayOutcome:
    rate: float
    seed: int
    pairs: int
    bot_labels: int
    changed: int
    silent_before: int
    silent_after: int
    routed: int
    groups: int
    bots_in_groups: int
    honest_in_groups: int
    calibration: float
    check_seconds: float  # find_correlated_groups + gold_at_risk (Dawid–Skene included)


def read_pairs(path: str | Path, limit: int | None = None) -> list[ReplayPair]:
    pairs = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            labels = tuple(label for label in row.get("annotator_labels", []) if label in LABELS)
            if len(labels) != LABELS_PER_PAIR:
                continue
            pairs.append(ReplayPair(row["pairID"], labels, rule_label(row["sentence1"], row["sentence2"])))
            if limit is not None and len(pairs) >= limit:
                break
    return pairs


def label_table(
    pairs: Sequence[ReplayPair],
    rate: float,
    seed: int,
    honest: int,
    bots: int,
    *,
    uniform: bool = False,
    noise: float = 0.0,
) -> pd.DataFrame:
    """The replayed labels in crowd-kit's layout (task = pair id, worker, label); with `uniform`
    the bots guess uniformly at random instead of sharing the rule (independent errors)."""
    rng = random.Random(seed)
    honest_ids = [f"{HONEST_PREFIX}{number}" for number in range(honest)]
    bot_ids = [f"{BOT_PREFIX}{number}" for number in range(bots)]
    rows = []
    for pair in pairs:
        workers = rng.sample(honest_ids, LABELS_PER_PAIR)
        free_bots = list(bot_ids)
        for position, (worker, label) in enumerate(zip(workers, pair.labels, strict=True)):
            # The first label is the author's: bots validate, they do not write the hypotheses.
            if position > 0 and free_bots and rng.random() < rate:
                bot = free_bots.pop(rng.randrange(len(free_bots)))
                guess = uniform or (noise > 0 and rng.random() < noise)
                rows.append((pair.pair_id, bot, rng.choice(LABELS) if guess else pair.rule))
            else:
                rows.append((pair.pair_id, worker, label))
    return pd.DataFrame.from_records(rows, columns=["task", "worker", "label"])


def replay(
    pairs: Sequence[ReplayPair],
    rate: float,
    seed: int,
    *,
    honest: int = 100,
    bots: int = 10,
    uniform: bool = False,
    noise: float = 0.0,
) -> tuple[ReplayOutcome, pd.DataFrame]:
    """One replay; returns its outcome and the pairs routed to adjudication (gold_at_risk's rows)."""
    data = label_table(pairs, rate, seed, honest, bots, uniform=uniform, noise=noise)
    real_gold = pd.Series({pair.pair_id: gold_label(list(pair.labels)) for pair in pairs})
    replayed_gold = data.groupby("task")["label"].agg(lambda labels: gold_label(list(labels)))
    replayed_gold = replayed_gold.reindex(real_gold.index)
    changed = replayed_gold != real_gold
    # Switched to another label: "-" would show itself, and so does a pair that had none.
    silent = changed & (replayed_gold != NO_GOLD) & (real_gold != NO_GOLD)
    checking = time.perf_counter()
    check = find_correlated_groups(data)
    routed = gold_at_risk(data, check)
    check_seconds = time.perf_counter() - checking
    silent_after = silent & ~real_gold.index.isin(routed["task"])
    members = [member for group in check.groups for member in group.members]
    outcome = ReplayOutcome(
        rate=rate,
        seed=seed,
        pairs=len(pairs),
        bot_labels=int(data["worker"].str.startswith(BOT_PREFIX).sum()),
        changed=int(changed.sum()),
        silent_before=int(silent.sum()),
        silent_after=int(silent_after.sum()),
        routed=len(routed),
        groups=len(check.groups),
        bots_in_groups=sum(member.startswith(BOT_PREFIX) for member in members),
        honest_in_groups=sum(member.startswith(HONEST_PREFIX) for member in members),
        calibration=check.calibration,
        check_seconds=check_seconds,
    )
    return outcome, routed


def _share(values: Sequence[int], pairs: int) -> str:
    shares = [100 * value / pairs for value in values]
    mean = sum(shares) / len(shares)
    return f"{mean:.2f}% ({min(shares):.2f}-{max(shares):.2f})"


def summary(outcomes: Sequence[ReplayOutcome]) -> str:
    lines = [
        "| bot labels | gold changed | silently switched, before | after | routed to adjudication "
        "| groups | bots in groups | honest ids in groups (false) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for rate in sorted({outcome.rate for outcome in outcomes}):
        runs = [outcome for outcome in outcomes if outcome.rate == rate]
        pairs = runs[0].pairs
        lines.append(
            f"| {rate:.0%} | {_share([r.changed for r in runs], pairs)} "
            f"| {_share([r.silent_before for r in runs], pairs)} | {_share([r.silent_after for r in runs], pairs)} "
            f"| {_share([r.routed for r in runs], pairs)} "
            f"| {sum(r.groups for r in runs) / len(runs):.1f} "
            f"| {sum(r.bots_in_groups for r in runs) / len(runs):.1f} "
            f"| {sum(r.honest_in_groups for r in runs)} in {len(runs)} seeds |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = os.environ.get("NLI_SHARED_DATA", "/work/shared/data")
    parser.add_argument("file", nargs="?", default=os.path.join(shared, "snli_1.0_dev.jsonl"))
    parser.add_argument("--rates", type=float, nargs="+", default=[0.1, 0.2, 0.3])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--honest", type=int, default=100)
    parser.add_argument("--bots", type=int, default=10)
    parser.add_argument("--limit", type=int, default=None, help="only the first N five-label pairs")
    parser.add_argument("--uniform", action="store_true", help="bots guess uniformly instead (independent errors)")
    parser.add_argument("--noise", type=float, default=0.0, help="share of each bot's labels guessed uniformly")
    parser.add_argument("--copies", type=int, default=1, help="repeat the pairs (new ids) to time a larger table")
    args = parser.parse_args(argv)
    read = read_pairs(args.file, args.limit)
    pairs = [
        ReplayPair(f"{pair.pair_id}/{copy}", pair.labels, pair.rule) for copy in range(args.copies) for pair in read
    ]
    kind = "guessing uniformly" if args.uniform else "sharing the rule"
    if args.noise and not args.uniform:
        kind += f", {args.noise:.0%} of their labels guessed"
    print(f"{len(pairs)} five-label pairs; {args.honest} honest ids, {args.bots} bot ids {kind}")
    outcomes = []
    for rate in args.rates:
        for seed in range(args.seeds):
            started = time.perf_counter()
            outcome, _ = replay(
                pairs, rate, seed, honest=args.honest, bots=args.bots, uniform=args.uniform, noise=args.noise
            )
            outcomes.append(outcome)
            print(
                f"rate {rate:.0%} seed {seed}: changed {outcome.changed}, silent {outcome.silent_before} -> "
                f"{outcome.silent_after}, routed {outcome.routed}, groups {outcome.groups} "
                f"(bots {outcome.bots_in_groups}, honest {outcome.honest_in_groups}), "
                f"calibration {outcome.calibration:.2f}, check {outcome.check_seconds:.1f} s "
                f"of {time.perf_counter() - started:.1f} s",
                flush=True,
            )
    print(summary(outcomes))


if __name__ == "__main__":
    main()
