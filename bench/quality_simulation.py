"""Simulation: how well the worker flags and the aggregators do on a crowd whose truth we know.

    .venv/bin/python bench/quality_simulation.py                        # all: tens of minutes, GLAD most of it
    QUALITY_SIM_QUICK=1 .venv/bin/python bench/quality_simulation.py    # small sizes, no 40k timing
    QUALITY_SIM_PART=sweep   (or timing)   only the 10/20/30% runs (or only the 40k timing)
    QUALITY_SIM_GLAD_40K=1   also time GLAD at 40k: some 8 minutes on a quiet 2-core machine

200 workers of planted kinds label NLI pairs the MultiNLI way: one author label (position 1) and
four validator labels, five distinct workers per pair, busier workers picked more often.

- honest: accuracy ~ Beta(8, 1) (mean 0.89, sd 0.10), errors along realistic lines (entailment is
  mistaken mostly for neutral, contradiction mostly for neutral, neutral for either), reading at a
  median of 6-25 s per item;
- random guesser: labels drawn from a habit of their own (Dirichlet(4, 4, 4) over the three
  labels, so not exactly uniform), unrelated to the pair, at a normal-looking 5-12 s;
- same label: one fixed label 95% of the time, else uniform;
- too fast: median 1.2-3 s per item and accuracy 0.45-0.65 (skimming), honest-style errors.

15% of the pairs are hard: honest and too-fast workers are 0.25 less accurate on them (the
item difficulty that GLAD models and the others do not).

The true labels are mildly unbalanced on purpose (40/30/30), so that a chance level of 1/3 would
be wrong. Authors are workers of the pool too and label by their kind; their label carries no
reading time. Everything is seeded; the same command prints the same table.

Reported: precision and recall of each flag (and of "any flag" against "any planted kind"), a
true-kind x flag count table, the accuracy against the true labels of the majority vote (on pairs
with a majority, and over all pairs with "-" counted wrong), Dawid-Skene, GLAD and MACE, and the
majority vote recomputed without the flagged workers (feature 11), at guesser shares of 10, 20 and
30%; then the time of one run of each aggregator on 40,000 five-label pairs.
"""

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corpus.labels import LABELS, NO_GOLD
from quality.aggregation import dawid_skene, glad, mace, majority_vote
from quality.flags import (
    FLAG_KINDS,
    RANDOM_GUESSER,
    SAME_LABEL,
    TOO_FAST,
    PairVotes,
    Vote,
    flag_workers,
    worker_figures,
)

QUICK = bool(os.environ.get("QUALITY_SIM_QUICK"))
PART = os.environ.get("QUALITY_SIM_PART", "all")  # all, sweep or timing
GLAD_AT_SCALE = bool(os.environ.get("QUALITY_SIM_GLAD_40K"))
SEED = 20260601
N_WORKERS = 200
N_PAIRS = 1_000 if QUICK else 10_000
TIMING_PAIRS = 40_000
GUESSER_SHARES = (0.10, 0.20, 0.30)
SAME_LABEL_SHARE = 0.05
TOO_FAST_SHARE = 0.05
TRUE_LABEL_SHARES = (0.40, 0.30, 0.30)  # entailment, neutral, contradiction (the order of LABELS)
GUESSER_MIN_ITEMS = 30  # flag_workers' default
HARD_PAIR_SHARE = 0.15
HARD_PAIR_ACCURACY_DROP = 0.25

HONEST = "honest"
KINDS = (HONEST, RANDOM_GUESSER, SAME_LABEL, TOO_FAST)

# Where an honest mistake goes, given the true label (rows and columns in the order of LABELS).
HONEST_ERRORS = np.array(
    [
        [0.00, 0.80, 0.20],  # entailment is mistaken mostly for neutral
        [0.60, 0.00, 0.40],  # neutral for either
        [0.25, 0.75, 0.00],  # contradiction mostly for neutral
    ]
)


@dataclass(frozen=True)
class Crowd:
    """The planted workers, one entry per worker in each array."""

    names: list[str]
    kinds: np.ndarray  # of KINDS
    accuracy: np.ndarray  # honest and too fast only
    habit: np.ndarray  # (workers, 3): a guesser's label preferences
    fixed_label: np.ndarray  # a same-label worker's label
    median_seconds: np.ndarray
    activity: np.ndarray  # relative chance of being picked for a pair


@dataclass(frozen=True)
class Collection:
    true_labels: np.ndarray  # (pairs,) label indices
    workers: np.ndarray  # (pairs, 5) worker indices, column 0 the author
    labels: np.ndarray  # (pairs, 5) label indices
    seconds: np.ndarray  # (pairs, 5), NaN for the author


def plant_crowd(rng: np.random.Generator, guesser_share: float) -> Crowd:
    counts = {
        RANDOM_GUESSER: round(N_WORKERS * guesser_share),
        SAME_LABEL: round(N_WORKERS * SAME_LABEL_SHARE),
        TOO_FAST: round(N_WORKERS * TOO_FAST_SHARE),
    }
    counts[HONEST] = N_WORKERS - sum(counts.values())
    kinds = rng.permutation(np.repeat(np.array(KINDS), [counts[kind] for kind in KINDS]))

    accuracy = np.where(kinds == TOO_FAST, rng.uniform(0.45, 0.65, N_WORKERS), rng.beta(8, 1, N_WORKERS))
    median_seconds = np.select(
        [kinds == HONEST, kinds == TOO_FAST],
        [rng.uniform(6, 25, N_WORKERS), rng.uniform(1.2, 3.0, N_WORKERS)],
        default=rng.uniform(5, 12, N_WORKERS),
    )
    return Crowd(
        names=[f"w{index:03d}" for index in range(N_WORKERS)],
        kinds=kinds,
        accuracy=accuracy,
        habit=rng.dirichlet([4, 4, 4], N_WORKERS),
        fixed_label=rng.integers(0, 3, N_WORKERS),
        median_seconds=median_seconds,
        activity=rng.lognormal(0.0, 0.8, N_WORKERS),
    )


def pick_workers(rng: np.random.Generator, activity: np.ndarray, n_pairs: int) -> np.ndarray:
    """Five distinct workers per pair, weighted by activity (Gumbel top-k: sampling without replacement)."""
    keys = np.log(activity)[None, :] + rng.gumbel(size=(n_pairs, len(activity)))
    top_five = np.argpartition(-keys, 5, axis=1)[:, :5]
    return rng.permuted(top_five, axis=1)


def draw_from(rng: np.random.Generator, probabilities: np.ndarray) -> np.ndarray:
    """One index per row of `probabilities` (..., 3)."""
    cumulative = probabilities.cumsum(axis=-1)
    return (rng.random(probabilities.shape[:-1])[..., None] > cumulative).sum(axis=-1).clip(max=2)


def collect(rng: np.random.Generator, crowd: Crowd, n_pairs: int) -> Collection:
    true_labels = rng.choice(3, size=n_pairs, p=TRUE_LABEL_SHARES)
    workers = pick_workers(rng, crowd.activity, n_pairs)
    kinds = crowd.kinds[workers]
    truth = np.broadcast_to(true_labels[:, None], workers.shape)

    hard = rng.random(n_pairs) < HARD_PAIR_SHARE
    accuracy = crowd.accuracy[workers] - np.where(hard, HARD_PAIR_ACCURACY_DROP, 0.0)[:, None]
    correct = rng.random(workers.shape) < accuracy
    honest_label = np.where(correct, truth, draw_from(rng, HONEST_ERRORS[truth]))
    guessed_label = draw_from(rng, crowd.habit[workers])
    habitual_label = np.where(
        rng.random(workers.shape) < 0.95, crowd.fixed_label[workers], rng.integers(0, 3, workers.shape)
    )
    labels = np.select(
        [kinds == RANDOM_GUESSER, kinds == SAME_LABEL], [guessed_label, habitual_label], default=honest_label
    )

    seconds = crowd.median_seconds[workers] * rng.lognormal(0.0, 0.45, workers.shape)
    seconds[:, 0] = np.nan  # the author's time is writing, not reading
    return Collection(true_labels=true_labels, workers=workers, labels=labels, seconds=seconds)


def as_crowd_kit_frame(crowd: Crowd, collection: Collection) -> pd.DataFrame:
    n_pairs = len(collection.true_labels)
    return pd.DataFrame(
        {
            "task": np.repeat([f"p{index:06d}" for index in range(n_pairs)], 5),
            "worker": np.array(crowd.names)[collection.workers.ravel()],
            "label": np.array(LABELS)[collection.labels.ravel()],
        }
    )


def as_pair_votes(crowd: Crowd, collection: Collection) -> list[PairVotes]:
    pairs = []
    for index, (workers, labels, seconds) in enumerate(
        zip(collection.workers, collection.labels, collection.seconds, strict=False)
    ):
        votes = tuple(
            Vote(crowd.names[worker], LABELS[label], None if np.isnan(second) else float(second))
            for worker, label, second in zip(workers, labels, seconds, strict=False)
        )
        pairs.append(PairVotes(f"p{index:06d}", votes))
    return pairs


def flag_scores(crowd: Crowd, flags, untested: set) -> tuple[dict, pd.DataFrame]:
    """Precision and recall per flag kind and for any flag; and the true kind x flag count table.

    `untested`: workers with too few leave-one-out items for the guesser test (or no labels at all).
    """
    kind_of = dict(zip(crowd.names, crowd.kinds, strict=False))
    flagged = {kind: {flag.worker for flag in flags if flag.kind == kind} for kind in FLAG_KINDS}
    scores = {}
    for kind in FLAG_KINDS:
        # Each flag is named after the planted kind it is meant to find.
        planted = {name for name, true_kind in kind_of.items() if true_kind == kind}
        scores[kind] = precision_recall(flagged[kind], planted)
    honest = {name for name, true_kind in kind_of.items() if true_kind == HONEST}
    for kind in FLAG_KINDS:
        scores[kind]["honest flagged"] = len(flagged[kind] & honest)
    any_flagged = set().union(*flagged.values())
    any_planted = {name for name, true_kind in kind_of.items() if true_kind != HONEST}
    scores["any flag"] = precision_recall(any_flagged, any_planted) | {"honest flagged": len(any_flagged & honest)}

    table = pd.DataFrame(0, index=list(KINDS), columns=[*FLAG_KINDS, "none", "workers", "untested"])
    for name, true_kind in kind_of.items():
        table.loc[true_kind, "workers"] += 1
        table.loc[true_kind, "untested"] += name in untested
        worker_flags = [kind for kind in FLAG_KINDS if name in flagged[kind]]
        for kind in worker_flags or ["none"]:
            table.loc[true_kind, kind] += 1
    return scores, table


def score_table(scores: dict) -> pd.DataFrame:
    table = pd.DataFrame(scores).T
    counts = ["planted", "flagged", "hits", "honest flagged"]
    table[counts] = table[counts].astype(int)
    for rate in ("precision", "recall"):
        table[rate] = table[rate].map("{:.3f}".format)
    return table[[*counts, "precision", "recall"]]


def precision_recall(flagged: set, planted: set) -> dict:
    hits = len(flagged & planted)
    return {
        "flagged": len(flagged),
        "planted": len(planted),
        "hits": hits,
        "precision": hits / len(flagged) if flagged else float("nan"),
        "recall": hits / len(planted) if planted else float("nan"),
    }


def accuracy_rows(frame: pd.DataFrame, truth: pd.Series, flagged_workers: set) -> list[dict]:
    """Accuracy against the true labels for each method, on all pairs and on pairs with a majority."""
    results = {"majority vote (3 of 5)": majority_vote(frame)}
    has_majority = results["majority vote (3 of 5)"].labels != NO_GOLD
    timings = {}
    for name, method in (("Dawid-Skene", dawid_skene), ("GLAD", glad), ("MACE", mace)):
        started = time.perf_counter()
        results[name] = method(frame)
        timings[name] = time.perf_counter() - started
    kept = frame.loc[~frame["worker"].isin(flagged_workers)]
    results["majority vote without flagged workers"] = majority_vote(kept)

    rows = []
    for name, result in results.items():
        labels = result.labels.reindex(truth.index, fill_value=NO_GOLD)
        right = labels == truth
        decided = labels != NO_GOLD
        rows.append(
            {
                "method": name,
                "acc on MV-majority pairs": right[has_majority].mean(),
                "acc on all pairs ('-' wrong)": right.mean(),
                "acc where it decides": right[decided].mean(),
                "pairs decided": decided.mean(),
                "seconds": timings.get(name, float("nan")),
            }
        )
    return rows


def run_share(guesser_share: float) -> None:
    rng = np.random.default_rng([SEED, round(guesser_share * 100)])
    crowd = plant_crowd(rng, guesser_share)
    collection = collect(rng, crowd, N_PAIRS)
    frame = as_crowd_kit_frame(crowd, collection)
    truth = pd.Series(
        np.array(LABELS)[collection.true_labels], index=pd.Index(sorted(frame["task"].unique()), name="task")
    )

    figures = worker_figures(as_pair_votes(crowd, collection))
    flags = flag_workers(figures)
    tested = {worker.worker for worker in figures if worker.loo_items >= GUESSER_MIN_ITEMS}
    scores, table = flag_scores(crowd, flags, untested=set(crowd.names) - tested)

    print(f"\n=== guessers {guesser_share:.0%} of {N_WORKERS} workers, {N_PAIRS:,} pairs x 5 labels (seed {SEED}) ===")
    print(describe_collection(frame, collection))
    print(f"workers tested for guessing (>= {GUESSER_MIN_ITEMS} leave-one-out items): {len(tested)} of {N_WORKERS}")
    print("\nflags: precision and recall against the planted kinds")
    print(score_table(scores).to_string())
    print("\nworkers by planted kind (rows) and flag (columns; a worker can carry several);")
    print("untested: too few leave-one-out items for the guesser test")
    print(table.to_string())
    print("\naccuracy against the true labels")
    rows = accuracy_rows(frame, truth, {flag.worker for flag in flags})
    print(pd.DataFrame(rows).set_index("method").to_string(float_format="{:.4f}".format), flush=True)


def describe_collection(frame: pd.DataFrame, collection: Collection) -> str:
    """The MultiNLI Table 2 figures of the simulated collection, to compare with the real ones."""
    gold = majority_vote(frame).labels.to_numpy()
    labels = np.array(LABELS)[collection.labels]
    has_gold = gold != NO_GOLD
    individual_is_gold = (labels[has_gold] == gold[has_gold, None]).mean()
    unanimous = (labels == labels[:, :1]).all(axis=1).mean()
    return (
        f"simulated collection: individual label = gold {individual_is_gold:.1%} (MultiNLI 88.7%), "
        f"unanimous {unanimous:.1%} (58.2%), no gold {1 - has_gold.mean():.1%} (1.8%)"
    )


def time_at_scale() -> None:
    rng = np.random.default_rng([SEED, 40])
    crowd = plant_crowd(rng, 0.10)
    collection = collect(rng, crowd, TIMING_PAIRS)
    frame = as_crowd_kit_frame(crowd, collection)
    print(
        f"\n=== one run of each on {TIMING_PAIRS:,} pairs x 5 labels = {len(frame):,} labels, {N_WORKERS} workers ==="
    )
    print(
        f"(machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: wall time suffers from other work, CPU time less)"
    )
    print(f"{'':<16}{'wall':>8}{'CPU':>9}")
    timed: list[tuple[str, Callable]] = [("majority vote", majority_vote), ("Dawid-Skene", dawid_skene), ("MACE", mace)]
    timed.append(("figures + flags", lambda _: flag_workers(worker_figures(as_pair_votes(crowd, collection)))))
    if GLAD_AT_SCALE:
        timed.append(("GLAD", glad))
    for name, method in timed:
        wall, cpu = time.perf_counter(), time.process_time()
        method(frame)
        print(f"{name:<16}{time.perf_counter() - wall:7.1f}s{time.process_time() - cpu:8.1f}s", flush=True)


def main() -> None:
    print(f"quality simulation, seed {SEED}{' (QUICK sizes)' if QUICK else ''}; flags with their default thresholds:")
    print("  random guesser: one-sided binomial vs chance, Benjamini-Hochberg alpha 0.05, >= 30 items;")
    print("  same label: >= 80% one label, >= 20 items;  too fast: median < 4 s per item, >= 10 timed items")
    if PART in ("all", "sweep"):
        for share in GUESSER_SHARES:
            run_share(share)
    if PART in ("all", "timing") and not QUICK:
        time_at_scale()


if __name__ == "__main__":
    main()
