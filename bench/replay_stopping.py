"""Replay full label sequences under each stopping rule (docs/quality.md "Stopping rules").

    .venv/bin/python bench/replay_stopping.py [FILE ...] [--shuffles 3] [--seed 0] [--thresholds 0.95 0.99] [--json]

FILE: SNLI / MultiNLI / ChaosNLI-style JSON lines with each pair's `annotator_labels` (default:
$NLI_SHARED_DATA/snli_1.0_dev.jsonl). Pairs with five labels are replayed, first in the file's
order of labels (the author's first), then in `--shuffles` shuffled orders, under the fixed rule,
the decided rule and the confident rule at each threshold (a pooled Dawid–Skene model: no worker
ids in these files, so one confusion matrix for every labeller, fitted on the five-label
sequences). Prints validation labels saved, pairs stopped early, gold labels changed against each
pair's own five-label gold, and Fleiss κ on the pairs that still took five labels (statsmodels'
fleiss_kappa, checked against the replay's own). No database.
"""

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corpus.stopping import CONFIDENT, DECIDED, FIXED, format_results, read_label_sequences, replay  # noqa: E402


def statsmodels_kappa(rows):
    try:
        import numpy as np
        from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
    except ImportError:
        return None
    if not rows:
        return None
    index = {"entailment": 0, "neutral": 1, "contradiction": 2}
    table, _ = aggregate_raters(np.array([[index[x] for x in row] for row in rows]), n_cat=3)
    return float(fleiss_kappa(table))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = os.environ.get("NLI_SHARED_DATA", "/work/shared/data")
    parser.add_argument("files", nargs="*", default=[os.path.join(shared, "snli_1.0_dev.jsonl")])
    parser.add_argument("--shuffles", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.95, 0.99])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rules = [(FIXED, None), (DECIDED, None), *((CONFIDENT, t) for t in args.thresholds)]
    for path in args.files:
        sequences = read_label_sequences(path)
        results = replay(sequences, rules=rules, shuffles=args.shuffles, seed=args.seed)
        for result in results:
            check = statsmodels_kappa(result.full_label_rows)
            if check is not None and result.kappa_full is not None:
                assert abs(check - result.kappa_full) < 1e-9, (check, result.kappa_full)
        five = sum(1 for seq in sequences if len(seq) == 5)
        if args.json:
            print(
                json.dumps(
                    {
                        "file": path,
                        "pairs": len(sequences),
                        "five_label_pairs": five,
                        "results": [r.as_dict() for r in results],
                    },
                    indent=1,
                )
            )
            continue
        print(f"{path}: {len(sequences)} pairs, {five} with five labels (replayed)")
        print(format_results(results))
        print()


if __name__ == "__main__":
    main()
