"""What the sentence-shape check (collection/sentence_shape.py) costs real writing
and what it stops, and its time per submit against the rules before it, in the same run.

    .venv/bin/python bench/sentence_check.py [--data ../shared/data] [--list]

Real hypotheses: SNLI dev (10,000) and MPE dev and train (Flickr captions like SNLI's, many
without a verb). MultiNLI dev (matched, mismatched) is read from multinli_1.0/ under --data when it
is there (it is not in ../shared/data today). Salad: the attack's kind (content words in random
order, as "Banana water purple under city simply chair.") and each SNLI dev hypothesis with its
words shuffled (the harder kind: its determiners and verb stay). `--list` prints every refused real
hypothesis with its faults.
"""

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collection import writing_rules
from collection.sentence_shape import REFUSE_AT, REFUSED, WARN_AT, WARNED, shapes, verdict

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
# Common words of the attack (bench/attacks/word_salad.py sends salads of them, made by `salad`).
SALAD_WORDS = [
    "banana",
    "water",
    "purple",
    "under",
    "city",
    "simply",
    "chair",
    "dog",
    "happy",
    "quickly",
    "blue",
    "over",
    "table",
    "house",
    "green",
    "slowly",
    "red",
    "car",
    "tree",
    "near",
    "street",
    "man",
    "woman",
    "big",
    "small",
    "run",
    "eat",
    "beside",
    "window",
    "yellow",
]


def salad(rng: random.Random) -> str:
    text = " ".join(rng.sample(SALAD_WORDS, rng.choice((5, 6, 7, 8))))
    return text[0].upper() + text[1:] + "."


def shuffled(text: str, rng: random.Random) -> str:
    words = text.rstrip(".").split()
    rng.shuffle(words)
    return " ".join(words) + "."


def real_sets(data: Path) -> dict[str, list[str]]:
    sets = {"SNLI dev": [json.loads(line)["sentence2"] for line in (data / "snli_1.0_dev.jsonl").open()]}
    for split in ("dev", "train"):
        rows = (data / "mpe" / f"mpe_{split}.txt").read_text(encoding="utf-8").splitlines()[1:]
        sets[f"MPE {split}"] = [row.split("\t")[5] for row in rows]
    for part in ("dev_matched", "dev_mismatched"):
        path = data / "multinli_1.0" / f"multinli_1.0_{part}.jsonl"
        if path.exists():
            sets[f"MultiNLI {part}"] = [json.loads(line)["sentence2"] for line in path.open()]
        else:
            print(f"(MultiNLI {part}: {path} is not here, not measured)")
    return sets


def per_submit_ms(texts: list[str], premise: str) -> tuple[list[float], list[float]]:
    """Each text through the writing rules without the shape check, then with it (the same call a
    submit makes), in milliseconds."""
    rules, before, after = writing_rules.TaskRules(), [], []
    real_shape_problem = writing_rules.shape_problem
    for text in texts:
        writing_rules.shape_problem = lambda text, *rules, **confirmed: None
        start = time.perf_counter()
        writing_rules.hypothesis_problem(premise, text, rules)
        before.append((time.perf_counter() - start) * 1000)
        writing_rules.shape_problem = real_shape_problem
        start = time.perf_counter()
        writing_rules.hypothesis_problem(premise, text, rules)
        after.append((time.perf_counter() - start) * 1000)
    return before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--list", action="store_true", help="print every refused real hypothesis")
    args = parser.parse_args()

    rng = random.Random(50)
    sets = real_sets(args.data)
    print(
        f"Refused when the faults weigh {REFUSE_AT} or more, warned from {WARN_AT} (refused from {WARN_AT} before).\n"
    )
    print(f"{'set':<26}{'hypotheses':>11}{'refused':>9}{'rate':>9}{'warned':>9}{'rate':>9}{'before':>9}")
    refused_lists = {}
    for name, texts in sets.items():
        parsed = shapes(texts)
        verdicts = [verdict(shape) for shape in parsed]
        refused = [
            (text, shape.faults) for text, shape, found in zip(texts, parsed, verdicts, strict=True) if found == REFUSED
        ]
        warned = verdicts.count(WARNED)
        refused_lists[name] = refused
        n = len(texts)
        print(
            f"{name:<26}{n:>11}{len(refused):>9}{len(refused) / n:>9.2%}{warned:>9}{warned / n:>9.2%}"
            f"{(len(refused) + warned) / n:>9.2%}"
        )
    attacks = {
        "salad (attack words)": [salad(rng) for _ in range(1000)],
        "SNLI dev, words shuffled": [shuffled(text, rng) for text in sets["SNLI dev"]],
    }
    print()
    for name, texts in attacks.items():
        verdicts = [verdict(shape) for shape in shapes(texts)]
        stopped, warned = verdicts.count(REFUSED), verdicts.count(WARNED)
        print(
            f"{name:<26}{len(texts):>11}{stopped:>9}{stopped / len(texts):>9.2%}{warned:>9}{warned / len(texts):>9.2%}"
        )

    sample = rng.sample(sets["SNLI dev"], 500)
    writing_rules.hypothesis_problem("A man rides a bike.", "A warm-up sentence.", writing_rules.TaskRules())
    before, after = per_submit_ms(sample, "A young man in a red jacket rides a bicycle down a busy street.")
    words = statistics.mean(len(text.split()) for text in sample)
    print(f"\nPer submit, one hypothesis ({len(sample)} SNLI dev hypotheses, {words:.1f} words on average):")
    for name, times in (("rules before", before), ("rules + shape", after)):
        ordered = sorted(times)
        print(
            f"  {name:<14} mean {statistics.mean(times):6.2f} ms   p50 {ordered[len(ordered) // 2]:6.2f} ms"
            f"   p99 {ordered[int(len(ordered) * 0.99)]:6.2f} ms"
        )

    if args.list:
        for name, refused in refused_lists.items():
            print(f"\nRefused in {name} ({len(refused)}):")
            for text, faults in refused:
                print(f"  {text!r}  [{', '.join(faults)}]")


if __name__ == "__main__":
    main()
