"""Calibrating the sense score (authorship.sense): how many real hypotheses it flags, how much of a
bot's grammatical nonsense it catches.

    DEBUG=1 .venv/bin/python bench/sense_score.py [--data ../shared/data] [--every N] [--nonsense N]

Real writing: SNLI dev's pairs with a gold label (premise, hypothesis), each scored as the platform
scores a written pair. Nonsense: for each distinct SNLI dev premise, one sentence of each kind the
bot bench/attacks/nonsense_verified_by_colluders.py writes (`nonsense_kinds`): templates filled with
words of no relation to the premise ("unrelated"), and with the premise's own words ("premise
words"). For each threshold: the share of real hypotheses under it (false flags, also per gold
label) and the share of each kind of nonsense under it (catch rate), with Wilson intervals.
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.attacks._participant import django_ready, wilson
from bench.attacks.nonsense_verified_by_colluders import nonsense_kinds

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
THRESHOLDS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def snli_dev(data: Path, every: int) -> list[tuple[str, str, str]]:
    """(premise, hypothesis, gold) of SNLI dev's pairs with a gold label, every `every`-th."""
    rows = [json.loads(line) for line in (data / "snli_1.0_dev.jsonl").open(encoding="utf-8")]
    pairs = [(row["sentence1"], row["sentence2"], row["gold_label"]) for row in rows if row["gold_label"] != "-"]
    return pairs[::every]


def sessions_judged(scores: list[float], size: int, threshold: float) -> dict[str, object]:
    """Writers judged by `authorship.sense.writer_low_sense`: consecutive sessions of `size` hypotheses."""
    from authorship.sense import writer_low_sense

    sessions = [scores[start : start + size] for start in range(0, len(scores) - size + 1, size)]
    judged = sum(writer_low_sense(sum(value < threshold for value in values), size) for values in sessions)
    return {"judged": judged, "of": len(sessions), "share": round(judged / len(sessions), 4) if sessions else None}


def share_under(values: list[float], threshold: float) -> dict[str, object]:
    under = sum(value < threshold for value in values)
    return {
        "under": under,
        "of": len(values),
        "share": round(under / len(values), 4),
        "interval": wilson(under, len(values)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--every", type=int, default=1, help="Every N-th pair only (a shared CPU).")
    parser.add_argument("--nonsense", type=int, default=1000, help="Premises given one sentence of each kind.")
    args = parser.parse_args()
    django_ready()  # authorship.sense is an app's module (no database is read)
    from authorship.sense import THRESHOLD, known_word_share, similarities

    real = snli_dev(args.data, args.every)
    rng = random.Random(0)
    premises = list(dict.fromkeys(premise for premise, _, _ in real))[: args.nonsense]
    bot = [(premise, kind, text) for premise in premises for kind, text in nonsense_kinds(premise, rng).items()]
    started = time.perf_counter()
    real_scores = similarities([(premise, hypothesis) for premise, hypothesis, _ in real])
    bot_scores = similarities([(premise, text) for premise, _, text in bot])
    seconds = time.perf_counter() - started
    kinds = sorted({kind for _, kind, _ in bot})
    labels = sorted({gold for _, _, gold in real})
    report = {
        "pairs": len(real),
        "nonsense": {kind: sum(k == kind for _, k, _ in bot) for kind in kinds},
        "seconds_per_1000_pairs_cpu": round(1000 * seconds / (len(real) + len(bot)), 2),
        "threshold_in_use": THRESHOLD,
        "known_word_share_under_0.5": {
            "snli_dev": sum(known_word_share(h) < 0.5 for _, h, _ in real),
            "nonsense": sum(known_word_share(t) < 0.5 for _, _, t in bot),
        },
        "thresholds": [
            {
                "threshold": threshold,
                "false_flags": share_under(real_scores, threshold),
                "false_flags_by_gold": {
                    label: share_under(
                        [s for s, (_, _, g) in zip(real_scores, real, strict=True) if g == label], threshold
                    )["share"]
                    for label in labels
                },
                "caught": {
                    kind: share_under([s for s, (_, k, _) in zip(bot_scores, bot, strict=True) if k == kind], threshold)
                    for kind in kinds
                },
            }
            for threshold in THRESHOLDS
        ],
        # Writers: sessions of `size` hypotheses in file order (SNLI dev's, a caption's three by one
        # worker; the bot's, one sentence a task, as an adversarial task's fooled try), of each kind.
        "writers_judged_at_threshold_in_use": {
            f"{size} hypotheses": {
                "snli_dev": sessions_judged(real_scores, size, THRESHOLD),
                **{
                    f"bot ({kind})": sessions_judged(
                        [s for s, (_, k, _) in zip(bot_scores, bot, strict=True) if k == kind], size, THRESHOLD
                    )
                    for kind in kinds
                },
            }
            for size in (5, 9, 15)
        },
        "lowest_real": sorted(
            ((round(s, 3), p, h) for s, (p, h, _) in zip(real_scores, real, strict=True)), key=lambda row: row[0]
        )[:5],
    }
    print(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
