"""The live artifact monitor: how well the hypothesis alone predicts the label, while data comes in.

A bag-of-words logistic regression (scikit-learn, binary word features) is cross-validated k-fold, so every pair is scored by a model that never saw it.
From those out-of-fold guesses come the hypothesis-only accuracy overall, per genre and per
writer, each beside its majority class with a Wilson interval; writers far more guessable than
the crowd are flagged with their give-away words and example hypotheses. A last model fitted on
every pair is kept as plain arrays (`ScoringModel`) for scoring drafts while a worker writes.

Plain Python, numpy and scikit-learn: no Django, no torch (the scoring side needs numpy only).
"""

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

import numpy as np
from numpy.typing import NDArray

from corpus.giveaways import giveaway_words
from corpus.labels import LABELS

TOKEN_PATTERN = r"(?u)\b\w+(?:'\w+)?\b"  # the words of corpus.giveaways.tokenize, marks left out
_WORD = re.compile(TOKEN_PATTERN)
Z95 = 1.959964


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float] | tuple[None, None]:
    """95% Wilson score interval of a proportion: sound at small n and near 0 or 1."""
    if not n:
        return None, None
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def group_figures(correct: Iterable[Any], labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy with its interval, beside the majority class of the group (its most frequent label)."""
    n = len(labels)
    hits = int(sum(correct))
    counts = Counter(labels)
    majority_label, majority_n = (
        min(counts.items(), key=lambda item: (-item[1], LABELS.index(item[0]))) if n else (None, 0)
    )
    low, high = wilson(hits, n)
    return {
        "n": n,
        "accuracy": hits / n if n else None,
        "ci_low": low,
        "ci_high": high,
        "majority_label": majority_label,
        "majority": majority_n / n if n else None,
    }


@dataclass
class ScoringModel:
    """The fitted model as arrays: vocabulary → column, weights (labels × words), intercepts."""

    vocabulary: dict[str, int]
    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]
    labels: tuple[str, ...] = LABELS

    def probabilities(self, text: str | None) -> tuple[NDArray[np.float64], list[str], list[int]]:
        """p(label | hypothesis) for each label, and the words of the text the model knows."""
        found = sorted({w for w in lowercase_tokens(text) if w in self.vocabulary})
        columns = [self.vocabulary[w] for w in found]
        scores = self.intercept + (self.coef[:, columns].sum(axis=1) if columns else 0.0)
        scores = scores - scores.max()
        exp = np.exp(scores)
        return exp / exp.sum(), found, columns

    def score(self, text: str | None, top_words: int = 3) -> dict[str, Any]:
        """{"probabilities": {label: p}, "predicted", "words": {label: [word, ...]}}: per label,
        the words of the text that push most towards it (largest weight, positive only), among the
        words a writer can change (`nameable_word`)."""
        probabilities, found, columns = self.probabilities(text)
        pushing = {}
        for index, label in enumerate(self.labels):
            weights = sorted(
                ((self.coef[index, c], w) for w, c in zip(found, columns, strict=True) if nameable_word(w)),
                reverse=True,
            )
            pushing[label] = [w for weight, w in weights[:top_words] if weight > 0]
        best = int(np.argmax(probabilities))
        return {
            "probabilities": {label: round(float(p), 4) for label, p in zip(self.labels, probabilities, strict=True)},
            "predicted": self.labels[best],
            "words": pushing,
        }

    def save(self, path: str | PathLike[str]) -> None:
        words = sorted(self.vocabulary, key=self.vocabulary.__getitem__)
        np.savez_compressed(
            path,
            words=np.array(words, dtype=object),
            coef=self.coef,
            intercept=self.intercept,
            labels=np.array(self.labels, dtype=object),
        )

    @classmethod
    def load(cls, path: str | PathLike[str]) -> "ScoringModel":
        with np.load(path, allow_pickle=True) as stored:
            words = list(stored["words"])
            return cls(
                {w: i for i, w in enumerate(words)}, stored["coef"], stored["intercept"], tuple(stored["labels"])
            )


def _classifier(seed: int, warm_start: bool = False) -> Any:  # a LogisticRegression (scikit-learn: no types)
    from sklearn.linear_model import LogisticRegression

    # L2-regularised (C=1) multinomial logistic regression: its probabilities stay honest on a
    # small collection, where an unregularised fit would be sure of noise.
    #
    # Solved by SAGA, not L-BFGS. scikit-learn divides the loss by the number of pairs, so a word
    # in k hypotheses has a gradient of about k/n: at 433,000 pairs the 50 "not"s of a planted
    # writer (gradient ~1e-4) sat below L-BFGS's tolerance from the first step and their weight
    # stayed 0. SAGA passes over the pairs one by one, so each epoch moves a word's weight in
    # proportion to how often it occurs, whatever n is, and it stops on the relative change of the
    # weights between epochs (about 30 epochs here at 43k, 130k and 433k pairs alike): it reaches
    # the regularised optimum, rare give-away words included, in less time than 100 L-BFGS steps.
    return LogisticRegression(C=1.0, solver="saga", max_iter=200, tol=1e-3, random_state=seed, warm_start=warm_start)


def lowercase_tokens(text: str | None) -> list[str]:
    """The tokens the scoring model sees (its vectoriser's TOKEN_PATTERN, lowercased), in order."""
    return _WORD.findall((text or "").lower())


# Negations are function words, but the give-away words of contradictions (MultiNLI §4): named.
NAMED_FUNCTION_WORDS = frozenset(
    {"no", "not", "never", "nobody", "nothing", "none", "nowhere", "neither", "nor", "cannot"}
)


def nameable_word(word: str) -> bool:
    """A word the nudge may name to a writer: no function word ("is", "on", "the"), which the
    model weighs but no sentence can do without, except the negations."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return word in NAMED_FUNCTION_WORDS or (word not in ENGLISH_STOP_WORDS and any(ch.isalpha() for ch in word))


def _vectorizer() -> Any:  # a CountVectorizer
    from sklearn.feature_extraction.text import CountVectorizer

    # Texts come tokenised (`words`), once for the model and the writers' give-away words alike.
    return CountVectorizer(analyzer=_identity, binary=True, min_df=2, dtype=np.float32)


def _identity(tokens: list[str]) -> list[str]:
    return tokens


def _fit(model: Any, X: Any, y: NDArray[Any]) -> Any:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    # One thread: the machines are small and shared (two cores), and a refresh beside the web
    # processes should not take every core for its BLAS pool.
    with warnings.catch_warnings(), threadpool_limits(limits=1):
        warnings.simplefilter("ignore", ConvergenceWarning)  # the epoch cap is a time limit, not an error
        return model.fit(X, y)


def cross_validated_guesses(
    X: Any, labels: Sequence[int], folds: int = 5, seed: int = 0
) -> tuple[NDArray[np.int64], NDArray[np.float64], int, Any]:
    """(guessed label index per pair, p of the guessed label per pair, folds used, the last
    fold's model), each pair scored by a model fitted on the other folds. X holds the pairs'
    word features (rows as `labels`), labels are indexes into LABELS.

    Each fold's fit starts from the previous fold's weights (four fifths of its training pairs
    are the same), which only saves epochs: every fold still runs to the same tolerance."""
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    y = np.asarray(labels)
    guessed = np.zeros(len(y), dtype=np.int64)
    confidence = np.zeros(len(y), dtype=np.float64)
    counts = np.bincount(y, minlength=len(LABELS))
    folds = max(2, min(folds, int(counts[counts > 0].min())))
    model = _classifier(seed, warm_start=True)
    for train, test in StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(X, y):
        model = _fit(model, X[train], y[train])
        with threadpool_limits(limits=1):
            probabilities = model.predict_proba(X[test])
        best = probabilities.argmax(axis=1)
        guessed[test] = model.classes_[best]
        confidence[test] = probabilities[np.arange(len(test)), best]
    return guessed, confidence, folds, model


def fit_scoring_model(
    tokenised: list[list[str]],
    labels: Sequence[int],
    seed: int = 0,
    vectorizer: Any = None,
    X: Any = None,
    model: Any = None,
) -> ScoringModel:
    """The model for scoring drafts, fitted on every pair. Pass the fitted `vectorizer` and its
    `X` to skip vectorising again, and `model` (a warm-start classifier) to start from its weights."""
    if vectorizer is None:
        vectorizer = _vectorizer()
        X = vectorizer.fit_transform(tokenised)
    model = _fit(model or _classifier(seed), X, np.asarray(labels))
    coef = np.zeros((len(LABELS), X.shape[1]))
    intercept = np.full(len(LABELS), -1e9)  # a label never seen is never predicted
    if len(model.classes_) == 2:
        # Binary: p(second class) = sigmoid(w·x + b), which softmax gives with scores 0 and w·x + b.
        first, second = model.classes_
        intercept[first] = 0.0
        coef[second], intercept[second] = model.coef_[0], model.intercept_[0]
    else:
        for row, label in enumerate(model.classes_):
            coef[label], intercept[label] = model.coef_[row], model.intercept_[row]
    return ScoringModel(dict(vectorizer.vocabulary_), coef, intercept)


def monitor(
    rows: Iterable[dict[str, Any]],
    folds: int = 5,
    seed: int = 0,
    min_writer_pairs: int = 30,
    flag_margin: float = 0.15,
    examples: int = 3,
    writer_words: int = 5,
    writer_min_count: int = 3,
    fit_final: bool = True,
) -> tuple[dict[str, Any], ScoringModel | None]:
    """The monitor's figures over `rows`: dicts with "hypothesis", "label" (one of LABELS),
    "genre", "writer" (an id or None).

    A writer is flagged when they wrote at least `min_writer_pairs` pairs, their accuracy is at
    least `flag_margin` above the rest of the crowd's and the lower end of their interval is
    above the crowd's accuracy: far more guessable, and not by chance.
    """
    rows = [row for row in rows if row["label"] in LABELS]
    if len({row["label"] for row in rows}) < 2:
        raise ValueError("the monitor needs hypotheses of at least two labels")
    texts = [row["hypothesis"] for row in rows]
    tokenised = [lowercase_tokens(text) for text in texts]
    y = [LABELS.index(row["label"]) for row in rows]
    vectorizer = _vectorizer()
    X = vectorizer.fit_transform(tokenised)
    guessed, confidence, folds, last = cross_validated_guesses(X, y, folds=folds, seed=seed)
    correct = guessed == np.asarray(y)
    label_names = [row["label"] for row in rows]
    overall = group_figures(correct, label_names)
    by_genre, by_writer = defaultdict(list), defaultdict(list)
    for index, row in enumerate(rows):
        by_genre[row["genre"] or ""].append(index)
        if row.get("writer") is not None:
            by_writer[row["writer"]].append(index)
    per_genre = {
        genre: group_figures(correct[ix], [label_names[i] for i in ix]) for genre, ix in sorted(by_genre.items())
    }
    writers = []
    total_correct, total_n = int(correct.sum()), len(rows)
    for writer, ix in by_writer.items():
        figures = group_figures(correct[ix], [label_names[i] for i in ix])
        rest_n = total_n - figures["n"]
        crowd = (total_correct - int(correct[ix].sum())) / rest_n if rest_n else None
        figures.update(writer=writer, crowd_accuracy=crowd)
        figures["flagged"] = bool(
            crowd is not None
            and figures["n"] >= min_writer_pairs
            and figures["accuracy"] - crowd >= flag_margin
            and figures["ci_low"] > crowd
        )
        listing = giveaway_words(
            ((tokenised[i], label_names[i]) for i in ix), min_count=writer_min_count, top=writer_words
        )
        figures["giveaway_words"] = {
            label: [{k: w[k] for k in ("word", "p", "count")} for w in words]
            for label, words in listing.items()
            if words
        }
        sure = sorted((i for i in ix if correct[i]), key=lambda i: -confidence[i])[:examples]
        figures["examples"] = [
            {"hypothesis": texts[i], "label": label_names[i], "p": round(float(confidence[i]), 3)} for i in sure
        ]
        writers.append(figures)
    writers.sort(key=lambda w: (not w["flagged"], -(w["accuracy"] or 0), str(w["writer"])))
    result = {
        "pairs": total_n,
        "folds": folds,
        "overall": overall,
        "per_genre": per_genre,
        "writers": writers,
        "model": "bag-of-words logistic regression (L2, C=1, SAGA), binary word features",
    }
    scoring = fit_scoring_model(tokenised, y, seed=seed, vectorizer=vectorizer, X=X, model=last) if fit_final else None
    return result, scoring
