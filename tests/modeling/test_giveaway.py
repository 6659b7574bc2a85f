"""Give-away words, and the hypothesis-only baseline against the majority class (Poliak et al. 2018).

A planted give-away word (every contradiction hypothesis says "never") must let the
hypothesis-only model beat the majority class on held-out pairs; with hypotheses independent of
the label it must not, beyond sampling noise. Seeds are fixed and the held-out sets large enough
that the margins below are several standard errors wide.
"""

import pytest
import torch

from corpus.giveaways import giveaway_words, tokenize
from modeling.training.data import SnapshotData, example_from_row
from modeling.training.loop import train
from modeling.training.synthetic import synthetic_rows

torch.set_num_threads(1)
HYP_ONLY = {
    "embedding_dim": 16,
    "hidden_dim": 16,
    "dropout": 0.1,
    "lr": 0.01,
    "batch_size": 32,
    "epochs": 6,
    "patience": 2,
    "seed": 5,
    "cpu_threads": 1,
}
N_TRAIN, N_DEV, N_TEST = 900, 300, 900  # test: a standard error of ~1.6 points


def labelled(rows):
    return [(tokenize(row["sentence2"]), row["gold_label"]) for row in rows]


def test_giveaway_words_lists_p_label_given_word_per_label():
    rows = [
        {"sentence2": "Nobody is never sleeping", "gold_label": "contradiction"},
        {"sentence2": "The man never sleeps", "gold_label": "contradiction"},
        {"sentence2": "A man never sleeps", "gold_label": "contradiction"},
        {"sentence2": "A man sleeps never never", "gold_label": "neutral"},
        {"sentence2": "A man sleeps", "gold_label": "entailment"},
        {"sentence2": "A man is tall", "gold_label": "-"},  # no gold: not counted
    ]
    listing = giveaway_words(labelled(rows), min_count=2, top=None)
    never = next(item for item in listing["contradiction"] if item["word"] == "never")
    assert never == {"word": "never", "p": 0.75, "count": 4, "label_count": 3}  # counted once per hypothesis
    assert listing["contradiction"][0]["word"] == "never"
    assert {item["word"] for item in listing["entailment"]} == {"a", "man", "sleeps"}
    assert all(item["count"] >= 2 for items in listing.values() for item in items)
    assert "tall" not in {item["word"] for items in listing.values() for item in items}
    assert "nobody" not in {i["word"] for i in giveaway_words(labelled(rows), min_count=2)["contradiction"]}


def run_pair(giveaway):
    def rows(n, seed):
        return [example_from_row(row) for row in synthetic_rows(n, seed=seed, giveaway=giveaway)]

    data = SnapshotData(train=rows(N_TRAIN, 1), evals={"dev": rows(N_DEV, 2), "test": rows(N_TEST, 3)}, manifest={})
    hypothesis_only, _ = train(data, "hypothesis_only", HYP_ONLY)
    majority, _ = train(data, "majority", {})
    return hypothesis_only["accuracy"]["test"], majority["accuracy"]["test"]


def test_hypothesis_only_beats_majority_when_a_giveaway_word_is_planted():
    hyp, maj = run_pair("never")
    # Contradictions become certain; the other two labels stay a coin flip: about 2/3 vs 1/3.
    assert hyp >= maj + 0.2, (hyp, maj)


def test_hypothesis_only_does_not_beat_majority_without_artifacts():
    hyp, maj = run_pair(None)
    assert maj == pytest.approx(1 / 3, abs=0.06)
    assert hyp <= maj + 0.05, (hyp, maj)  # about three standard errors


def test_giveaway_words_find_the_planted_word_in_synthetic_data():
    rows = synthetic_rows(600, seed=9, giveaway="never")
    top = giveaway_words(labelled(rows), min_count=20)["contradiction"][0]
    assert top["word"] == "never" and top["p"] == 1.0
