"""Benchmark and check: Penn trees from spaCy's dependency parse (artifacts.trees) on SNLI 1.0 dev.

    /work/main/.venv/bin/python bench/parses.py [--timing-pairs 2000] [--batch-size 256] [--n-process 2]

Agreement with the Stanford PCFG parses the SNLI files carry, over every distinct sentence1 and
every sentence2 of SNLI dev, run through the production pipeline (spaCy's own tokenization; the
spans are compared in characters, see artifacts/parse_scoring.py): labelled bracket precision,
recall and F1 (evalb's COLLINS.prm conventions), the share of sentences whose labelled
bracketing is identical, and the same for a right-branching baseline built over the Stanford
tree's own words and tags. Then whether the binary derivation reproduces all 20,000 binary
parses from their Stanford trees. Speed, on the first --timing-pairs pairs, pairs per second
with ratios against the tagger alone measured in the same run:
  (a) tag_pairs, tagger only (the phenomenon tagger as the tagging job ran it),
  (b) tag_and_parse_pairs: tagger + parser + trees, same nlp.pipe pass,
  (c) as (b) in --n-process worker processes.
Reads ../shared/data/snli_1.0_dev.jsonl ($NLI_SHARED_DATA); copies nothing. No Django.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from artifacts.parse_scoring import BracketScore, right_branching  # noqa: E402
from artifacts.phenomena import load_tagger, normalise_text  # noqa: E402
from artifacts.trees import binary_parse, constituency_tree, parse_tree, tokens_of  # noqa: E402

SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"


def read_rows(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def agreement(nlp, sentences, batch_size):
    """(ours, baseline) BracketScores of (text, Stanford parse) sentences."""
    ours, baseline = BracketScore(), BracketScore()
    texts = (normalise_text(text) for text, _ in sentences)
    for doc, (_, stanford) in zip(nlp.pipe(texts, batch_size=batch_size), sentences, strict=True):
        gold = parse_tree(stanford)
        ours.add(constituency_tree(tokens_of(doc)), gold)
        baseline.add(right_branching(gold), gold)
    return ours, baseline


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timing-pairs", type=int, default=2000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--n-process", type=int, default=2)
    parser.add_argument("--skip-agreement", action="store_true")
    args = parser.parse_args()

    rows = read_rows(SNLI_DEV)
    tagger_only, load_tag = timed(load_tagger)
    parsing, load_parse = timed(lambda: load_tagger(parse=True))
    print(
        f"{parsing.model_version}: tagger {tagger_only.nlp.pipe_names} loaded in {load_tag:.1f} s, "
        f"tag+parse {parsing.nlp.pipe_names} in {load_parse:.1f} s; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )

    pairs = [(row["sentence1"], row["sentence2"]) for row in rows[: args.timing_pairs]]
    runs = [
        ("(a) tag_pairs, tagger only", lambda: list(tagger_only.tag_pairs(pairs, batch_size=args.batch_size))),
        (
            "(b) tag_and_parse_pairs, tags + parses + trees",
            lambda: list(parsing.tag_and_parse_pairs(pairs, batch_size=args.batch_size)),
        ),
        (
            f"(c) as (b), n_process={args.n_process}",
            lambda: list(parsing.tag_and_parse_pairs(pairs, batch_size=args.batch_size, n_process=args.n_process)),
        ),
    ]
    results = []
    print(f"speed on the first {len(pairs)} pairs ({len({p for p, _ in pairs})} distinct premises)")
    print(f"{'method':50} {'seconds':>8} {'pairs/s':>8} {'vs (a)':>7}")
    baseline_seconds = None
    for name, run in runs:
        result, seconds = timed(run)
        results.append(result)
        baseline_seconds = baseline_seconds or seconds
        print(f"{name:50} {seconds:8.2f} {len(pairs) / seconds:8.0f} {baseline_seconds / seconds:6.2f}x")
    same_tags = [r.phenomena.tags for r in results[1]] == results[0] == [r.phenomena.tags for r in results[2]]
    same_trees = [(r.premise_parses, r.hypothesis_parses) for r in results[1]] == [
        (r.premise_parses, r.hypothesis_parses) for r in results[2]
    ]
    print(f"same tags in (a), (b), (c): {same_tags}; same trees in (b) and (c): {same_trees}\n")

    derived = sum(
        binary_parse(parse_tree(row[f"{s}_parse"])) == row[f"{s}_binary_parse"]
        for row in rows
        for s in ("sentence1", "sentence2")
    )
    print(f"binary parses derived from the Stanford trees equal to the files': {derived} of {2 * len(rows)}\n")

    if args.skip_agreement:
        return
    seen, premises = set(), []
    for row in rows:
        if row["sentence1"] not in seen:
            seen.add(row["sentence1"])
            premises.append((row["sentence1"], row["sentence1_parse"]))
    hypotheses = [(row["sentence2"], row["sentence2_parse"]) for row in rows]
    print("agreement with the Stanford PCFG parses (labelled brackets, evalb COLLINS.prm conventions)")
    print(
        f"{'sentences':26} {'n':>6} {'P':>6} {'R':>6} {'F1':>6} {'ident %':>8} | {'right-branching F1':>18} {'ident %':>8}"
    )
    for name, sentences in (("sentence1 (distinct)", premises), ("sentence2", hypotheses)):
        ours, baseline = agreement(parsing.nlp, sentences, args.batch_size)
        print(
            f"{name:26} {ours.sentences:6} {ours.precision:6.1f} {ours.recall:6.1f} {ours.f1:6.1f} "
            f"{ours.identical_share:8.1f} | {baseline.f1:18.1f} {baseline.identical_share:8.1f}"
        )


if __name__ == "__main__":
    main()
