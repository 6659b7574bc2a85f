"""The nudge names words a writer can change: never a function word ("is", "on"), which the model
may weigh heavily but no sentence can do without; negations, the classic give-aways, still named."""

import numpy as np

from artifacts.monitor import ScoringModel
from corpus.labels import LABELS


def model_weighing(weights):
    """A scoring model whose only weights are these, all towards contradiction."""
    vocabulary = {word: column for column, word in enumerate(weights)}
    coef = np.zeros((len(LABELS), len(weights)), dtype=np.float64)
    coef[LABELS.index("contradiction")] = list(weights.values())
    return ScoringModel(vocabulary, coef, np.zeros(len(LABELS), dtype=np.float64))


def test_function_words_are_never_named_but_negations_are():
    model = model_weighing({"is": 5.0, "on": 4.0, "the": 3.5, "not": 3.0, "sleeping": 2.0, "cat": 1.0})
    scored = model.score("The cat is not sleeping on the mat")
    assert scored["predicted"] == "contradiction"
    assert scored["words"]["contradiction"] == ["not", "sleeping", "cat"]


def test_a_text_of_function_words_alone_names_nothing():
    model = model_weighing({"is": 5.0, "on": 4.0})
    assert model.score("It is on")["words"]["contradiction"] == []
