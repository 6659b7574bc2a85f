"""The model's vote in the stopping rule, replayed on SNLI dev (docs/model_annotators.md).

    .venv/bin/python bench/replay_model_vote.py [FILE] [--accuracies 0.6 0.7 0.8 0.9 0.95] [--seeds 3]
                                                 [--baselines cbow bilstm] [--epochs 4]

FILE: SNLI-style JSON lines with five `annotator_labels` (default $NLI_SHARED_DATA/snli_1.0_dev.jsonl,
read where it lies, never copied). Each five-label pair is replayed in file order (the writer's
label first) under the decided rule alone (human only: stop once three human labels agree) and
with a model's vote beside it (model_annotators.vote: also stop once two human labels agree with
the model's label, the model's label then being the gold). Reported: validation labels saved by
each, pairs the vote stopped, and gold labels changed against each pair's own five-label gold (the
decided rule alone changes none).

Model labels come from:
- drawn at fixed accuracies: with probability a the pair's five-label gold, else one of the two
  other labels at random (a no-gold pair: a random label); mean over `--seeds` draws;
- the platform's own baselines, trained here on the CPU with modeling.training.loop.train: the
  file is cut in two halves by pair order, a model trained on each half (its gold labels) labels
  the other half, so no pair is labelled by a model that saw it (cross-fitting).
No database. No model is downloaded: the baselines start from random embeddings.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corpus.labels import LABELS, LABELS_PER_PAIR, NO_GOLD  # noqa: E402
from corpus.stopping import majority_gold  # noqa: E402
from model_annotators.vote import HEADER, VoteReplay, replay_vote  # noqa: E402


def read_rows(path):
    rows = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                labels = [label for label in row.get("annotator_labels", []) if label in LABELS]
                if len(labels) == LABELS_PER_PAIR:
                    rows.append({**row, "labels": labels})
    return rows


def drawn_labels(sequences, accuracy, rng):
    drawn = []
    for labels in sequences:
        gold = majority_gold(labels)
        if gold == NO_GOLD:
            drawn.append(rng.choice(LABELS))
        elif rng.random() < accuracy:
            drawn.append(gold)
        else:
            drawn.append(rng.choice([label for label in LABELS if label != gold]))
    return drawn


def baseline_labels(rows, model, epochs):
    """Cross-fitted predictions of a platform baseline trained here on the CPU (module docstring)."""
    from modeling.training.data import SnapshotData, example_from_row
    from modeling.training.loop import train

    half = len(rows) // 2
    halves = [rows[:half], rows[half:]]
    predicted: list[str] = []
    config = {
        "epochs": epochs,
        "embedding_dim": 100,
        "hidden_dim": 100,
        "batch_size": 32,
        "embeddings": "random",
        "device": "cpu",
        "cpu_threads": 1,
        "patience": epochs,
    }
    for trained_on, labelled in ((halves[1], halves[0]), (halves[0], halves[1])):
        examples = [example_from_row({**row, "gold_label": row["gold_label"]}, "train") for row in trained_on]
        cut = len(examples) // 10
        data = SnapshotData(train=examples[cut:], evals={"dev": examples[:cut]}, manifest={})
        _, trainer = train(data, model, config)
        targets = [example_from_row(row, "test") for row in labelled]
        from modeling.training.data import encode_examples

        encode_examples(targets, trainer.vocab, trainer.config.get("max_len"))
        predicted += [LABELS[i] for i in trainer.predict(targets)]
    return predicted


TRIAGE_HEADER = (
    "| model labels | pairs flagged (model ≠ writer) | of them gold ≠ writer | share of all gold ≠ writer pairs flagged |\n"
    "|---|---|---|---|"
)


def triage_row(name, sequences, model_labels):
    """Triage: pairs where the model disagrees with the writer's label (the first of the five) are
    validated first. How many it flags, how often the five-label gold then differs from the writer's
    label (against the base rate), and what share of such pairs it finds."""
    flagged = hits = wrong_writer = 0
    for labels, model_label in zip(sequences, model_labels, strict=True):
        wrong = majority_gold(labels) not in (labels[0], NO_GOLD)
        wrong_writer += wrong
        if model_label != labels[0]:
            flagged += 1
            hits += wrong
    return (
        f"| {name} | {flagged} ({flagged / len(sequences):.1%}) | {hits} ({hits / flagged if flagged else 0:.1%}) | "
        f"{hits / wrong_writer if wrong_writer else 0:.1%} of {wrong_writer} |"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = os.environ.get("NLI_SHARED_DATA", "/work/shared/data")
    parser.add_argument("file", nargs="?", default=os.path.join(shared, "snli_1.0_dev.jsonl"))
    parser.add_argument("--accuracies", type=float, nargs="+", default=[0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--baselines", nargs="*", default=["cbow"])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--json", default="", help="also write the rows here")
    args = parser.parse_args(argv)
    rows = read_rows(args.file)
    sequences = [row["labels"] for row in rows]
    print(f"{args.file}: {len(sequences)} five-label pairs replayed (file order, the writer's label first)\n")
    print(HEADER)
    results: list[VoteReplay] = []
    triage: list[str] = []
    for accuracy in args.accuracies:
        runs = [
            replay_vote(f"drawn at {accuracy:g}", sequences, drawn_labels(sequences, accuracy, random.Random(seed)))
            for seed in range(args.seeds)
        ]
        mean = VoteReplay(name=f"drawn at {accuracy:g} (mean of {args.seeds} draws)")
        mean.pairs, mean.validation_labels = runs[0].pairs, runs[0].validation_labels
        mean.saved_human_rule = runs[0].saved_human_rule
        mean.accuracy = statistics.mean(r.accuracy or 0.0 for r in runs)
        mean.saved_with_vote = round(statistics.mean(r.saved_with_vote for r in runs))
        mean.vote_stops = round(statistics.mean(r.vote_stops for r in runs))
        mean.gold_changed = round(statistics.mean(r.gold_changed for r in runs))
        mean.gold_given_to_no_gold = round(statistics.mean(r.gold_given_to_no_gold for r in runs))
        print(mean.row(), flush=True)
        triage.append(
            triage_row(
                f"drawn at {accuracy:g} (seed 0)", sequences, drawn_labels(sequences, accuracy, random.Random(0))
            )
        )
        results.append(mean)
    for model in args.baselines:
        started = time.monotonic()
        labels = baseline_labels(rows, model, args.epochs)
        result = replay_vote(f"{model} baseline (cross-fitted, CPU)", sequences, labels)
        print(result.row() + f" <!-- trained in {time.monotonic() - started:.0f} s -->", flush=True)
        results.append(result)
        triage.append(triage_row(f"{model} baseline", sequences, labels))
    wrong = sum(majority_gold(labels) not in (labels[0], NO_GOLD) for labels in sequences)
    print(
        f"\nTriage (base rate: the five-label gold differs from the writer's label on {wrong} of {len(sequences)} pairs, "
        f"{wrong / len(sequences):.1%})\n"
    )
    print(TRIAGE_HEADER)
    print("\n".join(triage))
    if args.json:
        Path(args.json).write_text(json.dumps([vars(r) for r in results], indent=1))


if __name__ == "__main__":
    main()
