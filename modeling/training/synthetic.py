"""Synthetic MultiNLI-format rows for tests and bench/: random words, controlled length, and an
optional planted give-away word (e.g. every contradiction hypothesis says "never")."""

import random
from collections.abc import Sequence
from typing import Any

from .data import LABELS

WORDS = [
    "man",
    "woman",
    "child",
    "dog",
    "cat",
    "horse",
    "bird",
    "boy",
    "girl",
    "people",
    "team",
    "crowd",
    "worker",
    "player",
    "artist",
    "chef",
    "street",
    "park",
    "beach",
    "house",
    "kitchen",
    "river",
    "field",
    "market",
    "stage",
    "office",
    "road",
    "table",
    "car",
    "boat",
    "bike",
    "runs",
    "walks",
    "sits",
    "eats",
    "sleeps",
    "plays",
    "holds",
    "reads",
    "watches",
    "jumps",
    "throws",
    "climbs",
    "cooks",
    "paints",
    "rides",
    "red",
    "blue",
    "green",
    "small",
    "large",
    "old",
    "young",
    "happy",
    "busy",
    "quiet",
    "loud",
    "bright",
    "wet",
    "dry",
    "early",
    "late",
    "the",
    "a",
    "an",
    "two",
    "three",
    "some",
    "several",
    "many",
    "on",
    "in",
    "at",
    "near",
    "under",
    "over",
    "with",
    "without",
    "behind",
]
GENRES = ("fiction", "government", "slate", "telephone", "travel")


def _length(rng: random.Random, mean: float, cap: int) -> int:
    # MultiNLI-like long tail: most sentences short, a few very long.
    return max(1, min(cap, int(rng.expovariate(1.0 / mean)) + 2))


def synthetic_rows(
    n: int,
    seed: int = 0,
    giveaway: str | None = None,
    giveaway_label: str = "contradiction",
    premise_mean: float = 20,
    hypothesis_mean: float = 9,
    max_len: int = 80,
    genres: Sequence[str] = GENRES,
    label_weights: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """`n` rows with MultiNLI's fields; labels drawn independently of the words, except that
    every `giveaway_label` hypothesis gets the word `giveaway` when one is given."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        label = rng.choices(LABELS, weights=label_weights)[0]
        premise = [rng.choice(WORDS) for _ in range(_length(rng, premise_mean, max_len))]
        hypothesis = [rng.choice(WORDS) for _ in range(_length(rng, hypothesis_mean, max_len))]
        if giveaway and label == giveaway_label:
            hypothesis.insert(rng.randrange(len(hypothesis) + 1), giveaway)
        genre = genres[i % len(genres)]
        rows.append(
            {
                "annotator_labels": [label],
                "genre": genre,
                "gold_label": label,
                "pairID": f"{seed}-{i}",
                "promptID": f"{seed}-{i // 3}",
                "sentence1": " ".join(premise) + ".",
                "sentence2": " ".join(hypothesis) + ".",
            }
        )
    return rows
