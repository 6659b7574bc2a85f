"""Benchmark and check: Penn trees from spaCy's dependency parse (artifacts.dependency_trees) on SNLI 1.0 dev.

    /work/main/.venv/bin/python bench/parses.py [--timing-pairs 2000] [--batch-size 256] [--n-process 2]

Agreement with the Stanford PCFG parses the SNLI files carry, over every distinct sentence1 and
every sentence2 of SNLI dev, run through the production pipeline (spaCy's own tokenization; the
spans are compared in characters, see artifacts/parse_scoring.py): labelled bracket precision,
recall and F1 (evalb's COLLINS.prm conventions), the share of sentences whose labelled
bracketing is identical, and the same for a right-branching baseline built over the Stanford
tree's own words and tags. Then whether the binary derivation reproduces all 20,000 binary
parses from their Stanford trees. Speed, on the first --timing-pairs pairs, pairs per second
with ratios against the tagger alone measured in the same run, --repeat rounds, the methods
interleaved and their order rotated each round, wall-clock and CPU time (this process's; on
shared cores the CPU time is the steadier figure), min and median, load average each round:
  (a)  tag_pairs, tagger only (tok2vec + tagger: the phenomenon tagger as the job ran it),
  (a') tag_pairs on the pipeline loaded with its parser: the parser is left off (imported pairs),
  (b0) tagger + parser + the previous converter (tests/artifacts/reference_trees.py, tags read
       apart from the tree), as tag_and_parse_pairs ran before it was made faster,
  (b)  tag_and_parse_pairs: tagger + parser + trees, same nlp.pipe pass,
  (c)  as (b) in --n-process worker processes (only with --n-process above 1).
Reads ../shared/data/snli_1.0_dev.jsonl ($NLI_SHARED_DATA); copies nothing. No Django.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from artifacts.dependency_trees import constituency_tree, tokens_of  # noqa: E402
from artifacts.parse_scoring import BracketScore, right_branching  # noqa: E402
from artifacts.phenomena import PREMISE, TaggedPair, normalise_text, pair_phenomena  # noqa: E402
from artifacts.phenomenon_tagger import _sentences_to_run, doc_phenomena, load_tagger  # noqa: E402
from artifacts.trees import binary_parse, parse_tree  # noqa: E402

SNLI_DEV = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data")) / "snli_1.0_dev.jsonl"


def read_rows(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def timed(function):
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def cpu_and_wall(function):
    """(result, CPU seconds of this process, wall seconds)."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = function()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def previous_pass(tagger, pairs, batch_size):
    """tag_and_parse_pairs as it ran before the converter was made faster: the tags read off the
    Doc by doc_phenomena, the tree by the previous converter reading the tokens again."""
    sys.path.insert(0, str(REPO / "tests" / "artifacts"))
    import reference_trees

    premises = {}
    stream = tagger.nlp.pipe(_sentences_to_run(pairs), as_tuples=True, batch_size=batch_size)
    for doc, (role, original, premise_text) in stream:
        analysed, parses = doc_phenomena(doc, original), reference_trees.parses_of_doc(doc)
        if role == PREMISE:
            premises[original] = (analysed, parses)
        else:
            premise, premise_parses = premises[premise_text]
            yield TaggedPair(pair_phenomena(premise, analysed), premise_parses, parses)


def speed(runs, repeat, n_pairs):
    """Times each of ``runs`` [(name, function)] ``repeat`` times, interleaved, the order rotated
    each round; prints min and median, and the ratios to the first run of the same round."""
    cpu: dict[str, list[float]] = {name: [] for name, _ in runs}
    wall: dict[str, list[float]] = {name: [] for name, _ in runs}
    results = {}
    for round_ in range(repeat):
        shift = round_ % len(runs)
        order = runs[shift:] + runs[:shift]
        for name, run in order:
            results[name], cpu_s, wall_s = cpu_and_wall(run)
            cpu[name].append(cpu_s)
            wall[name].append(wall_s)
        print(
            f"  round {round_ + 1}: load average {os.getloadavg()[0]:.1f}; "
            + ", ".join(f"{name.split()[0]} {wall[name][-1]:.2f}/{cpu[name][-1]:.2f}s" for name, _ in runs)
        )
    base = runs[0][0]
    print(
        f"\n{'method':58} {'wall min':>8} {'median':>7} {'CPU min':>8} {'median':>7} "
        f"{'pairs/s':>8} {'(CPU)':>6} {'vs (a) wall':>11} {'CPU':>5}"
    )
    for name, _ in runs:
        # Ratios per round (same round, same load), then their median; pairs/s from the CPU min.
        wall_ratio = statistics.median(b / s for b, s in zip(wall[base], wall[name], strict=True))
        cpu_ratio = statistics.median(b / s for b, s in zip(cpu[base], cpu[name], strict=True))
        print(
            f"{name:58} {min(wall[name]):8.2f} {statistics.median(wall[name]):7.2f} {min(cpu[name]):8.2f} "
            f"{statistics.median(cpu[name]):7.2f} {n_pairs / min(wall[name]):8.0f} {n_pairs / min(cpu[name]):6.0f} "
            f"{wall_ratio:10.2f}x "
            f"{cpu_ratio:4.2f}x"
        )
    print(
        "(pairs/s from the wall-clock min and the CPU-time min; ratios: median over rounds of (a)'s time / the method's time in that round)"
    )
    return results


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
    parser.add_argument("--n-process", type=int, default=1, help="above 1: also time (c) in worker processes")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the timed methods")
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
    size = args.batch_size
    runs = [
        ("(a)  tag_pairs, tagger only", lambda: list(tagger_only.tag_pairs(pairs, batch_size=size))),
        ("(a') tag_pairs, parser loaded and left off", lambda: list(parsing.tag_pairs(pairs, batch_size=size))),
        ("(b0) tags + parser + previous converter", lambda: list(previous_pass(parsing, pairs, size))),
        ("(b)  tag_and_parse_pairs, tags + parser + trees", lambda: list(parsing.tag_and_parse_pairs(pairs, size))),
    ]
    if args.n_process > 1:
        runs.append(
            (
                f"(c)  as (b), n_process={args.n_process}",
                lambda: list(parsing.tag_and_parse_pairs(pairs, size, n_process=args.n_process)),
            )
        )
    print(
        f"speed on the first {len(pairs)} pairs ({len({p for p, _ in pairs})} distinct premises), "
        f"batch size {size}, {args.repeat} rounds"
    )
    results = speed(runs, args.repeat, len(pairs))
    tags = [list(results[name]) for name, _ in runs[:2]]
    parsed = [results[name] for name, _ in runs[2:]]
    same_tags = all(found == tags[0] for found in tags) and all(
        [r.phenomena.tags for r in result] == tags[0] for result in parsed
    )
    same_trees = all(
        [(r.premise_parses, r.hypothesis_parses) for r in result]
        == [(r.premise_parses, r.hypothesis_parses) for r in parsed[0]]
        for result in parsed
    )
    print(f"same tags in every method: {same_tags}; same trees in (b0), (b) (and (c)): {same_trees}\n")

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
