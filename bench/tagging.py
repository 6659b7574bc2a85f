"""Benchmark and sanity check: MultiNLI phenomenon tags on SNLI 1.0 dev.

    /work/main/.venv/bin/python bench/tagging.py [--timing-pairs 3000] [--batch-size 256]

Speed, on the first --timing-pairs pairs: pairs per second, with ratios against the baseline
measured in the same run, for
  (a)  one nlp(text) call per sentence (the baseline),
  (b)  nlp.pipe with batching, every sentence,
  (b') tag_pairs: nlp.pipe with batching, a premise repeated from the previous pair not re-run,
  (c)  spaCy's own nlp.pipe(n_process=2), every sentence,
  (c') tag_pairs(n_process=2): nlp.pipe in two worker processes that send back only the tags;
and whether all five give the same tags. Then, on all pairs, the share of pairs with each tag,
which sentence had it, and the most frequent gold label among them, beside the paper's Table 6
(whose label column is for MultiNLI dev). Keeps to a couple of minutes on two busy cores.
Reads ../shared/data/snli_1.0_dev.jsonl, or $NLI_SHARED_DATA/snli_1.0_dev.jsonl; copies nothing.
No Django.
"""

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The imports below come after the sys.path line (E402): bench scripts run as plain files.
from artifacts.phenomena import BOTH, HYPOTHESIS, PHENOMENA, PREMISE, normalise_text, pair_phenomena  # noqa: E402
from artifacts.phenomenon_tagger import doc_phenomena, load_tagger  # noqa: E402

SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"

# Table 6 of Williams et al. (2018): dev-set % for SNLI and MultiNLI, and MultiNLI's most frequent
# label with its share ("<1" printed as written).
PAPER_TABLE_6 = {
    "pronouns": ("34", "68", "entailment 34"),
    "quantifiers": ("33", "63", "contradiction 36"),
    "modals": ("<1", "28", "entailment 35"),
    "negation": ("5", "31", "contradiction 48"),
    "wh_words": ("5", "30", "entailment 35"),
    "belief_verbs": ("<1", "19", "entailment 34"),
    "time_terms": ("19", "36", "neutral 35"),
    "conversational_pivots": ("<1", "14", "neutral 34"),
    "presupposition_triggers": ("8", "22", "neutral 34"),
    "comparatives_superlatives": ("3", "17", "neutral 39"),
    "conditionals": ("4", "15", "neutral 35"),
    "tense_match": ("62", "69", "entailment 37"),
    "interjections": ("<1", "5", "entailment 36"),
    "long_sentence": ("<1", "5", "entailment 42"),
    "existentials": ("5", "8", "contradiction 36"),
}


def read_pairs(path):
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return [(row["sentence1"], row["sentence2"]) for row in rows], [row["gold_label"] for row in rows]


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def one_call_per_sentence(tagger, pairs):
    return [pair_phenomena(tagger.analyse(premise), tagger.analyse(hypothesis)).tags for premise, hypothesis in pairs]


def as_pairs(analysed):
    analysed = iter(analysed)
    return [pair_phenomena(premise, hypothesis).tags for premise, hypothesis in zip(analysed, analysed, strict=False)]


def pipe_every_sentence(tagger, pairs, batch_size):
    return as_pairs(tagger.analyse_texts([sentence for pair in pairs for sentence in pair], batch_size=batch_size))


def spacy_n_process(tagger, pairs, batch_size, n_process):
    """spaCy's own multiprocessing: every Doc is serialised in a worker and rebuilt here."""
    texts = [(normalise_text(sentence), sentence) for pair in pairs for sentence in pair]
    docs = tagger.nlp.pipe(texts, as_tuples=True, batch_size=batch_size, n_process=n_process)
    return as_pairs(doc_phenomena(doc, text) for doc, text in docs)


def print_speed(runs, n_pairs):
    baseline = runs[0][2]
    print(f"{'method':58} {'seconds':>8} {'pairs/s':>9} {'vs (a)':>7}")
    for name, _, seconds in runs:
        print(f"{name:58} {seconds:8.2f} {n_pairs / seconds:9.0f} {baseline / seconds:6.2f}x")


def print_frequencies(results, gold):
    n_pairs = len(results)
    print(
        f"\nSNLI dev, {n_pairs} pairs: % of pairs with each tag (P/H/B: % of pairs where only the premise, "
        "only the hypothesis, or both had it);\nmost frequent gold label among the tagged pairs that have one"
    )
    print(
        f"{'tag':32} {'ours %':>6} {'P':>5} {'H':>5} {'B':>5} {'paper SNLI':>10} {'paper MNLI':>10}   "
        f"{'our SNLI label':17} paper MNLI label"
    )
    for phenomenon in PHENOMENA:
        where = Counter(result.where.get(phenomenon.name) for result in results)
        tagged = [label for result, label in zip(results, gold, strict=False) if phenomenon.name in result.where]
        labels = Counter(label for label in tagged if label != "-")
        top = labels.most_common(1)
        top_text = f"{top[0][0]} {100 * top[0][1] / sum(labels.values()):.0f}" if top else "-"
        snli, mnli, mnli_label = PAPER_TABLE_6[phenomenon.name]
        shares = [100 * where[key] / n_pairs for key in (PREMISE, HYPOTHESIS, BOTH)]
        print(
            f"{phenomenon.label:32} {sum(shares):6.1f} {shares[0]:5.1f} {shares[1]:5.1f} {shares[2]:5.1f} "
            f"{snli:>10} {mnli:>10}   {top_text:17} {mnli_label}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--timing-pairs", type=int, default=3000, help="pairs to time the five methods on")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()

    all_pairs, gold = read_pairs(SNLI_DEV)
    pairs = all_pairs[: args.timing_pairs]
    tagger, load_seconds = timed(load_tagger)
    print(
        f"{tagger.model_version}, pipeline {tagger.nlp.pipe_names}, loaded in {load_seconds:.1f} s; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"timing on the first {len(pairs)} pairs ({len({p for p, _ in pairs})} distinct premises)\n")

    batch = args.batch_size
    runs = []
    for name, run in [
        ("(a)  one nlp(text) call per sentence", lambda: one_call_per_sentence(tagger, pairs)),
        (f"(b)  nlp.pipe, batch {batch}, every sentence", lambda: pipe_every_sentence(tagger, pairs, batch)),
        (f"(b') tag_pairs, batch {batch}, repeated premise reused", lambda: list(tagger.tag_pairs(pairs, batch))),
        (f"(c)  spaCy nlp.pipe, batch {batch}, n_process=2", lambda: spacy_n_process(tagger, pairs, batch, 2)),
        (f"(c') tag_pairs, batch {batch}, n_process=2", lambda: list(tagger.tag_pairs(pairs, batch, n_process=2))),
    ]:
        result, seconds = timed(run)
        runs.append((name, result, seconds))
    print_speed(runs, len(pairs))
    same = all(result == runs[0][1] for _, result, _ in runs)
    print(f"all methods give the same tags: {same}; load average now {os.getloadavg()[0]:.1f}")

    results, seconds = timed(lambda: list(tagger.tag_pairs_with_sources(all_pairs, batch)))
    print(f"\nall {len(all_pairs)} pairs tagged by (b') in {seconds:.1f} s")
    print_frequencies(results, gold)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
