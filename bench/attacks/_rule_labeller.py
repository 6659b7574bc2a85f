"""The cheap rule a worthless-but-better-than-chance validator labels by: high word overlap
means entailment, a negation or antonym cue means contradiction, anything else is neutral.

It needs no reading: it agrees with SNLI dev's gold about half the time (0.515 of its 9,842 pairs
with a gold label), well above chance (1/3) and well below an ordinary worker (~0.85). Every bot of this kind gives the same label on a
pair, so their errors are correlated: the attack suite's rule-based labellers and the gold-flip
replay share this one function.
"""

import re

NEGATION_CUES = frozenset(
    [
        "no",
        "not",
        "nobody",
        "nothing",
        "never",
        "none",
        "nowhere",
        "cannot",
        "can't",
        "don't",
        "doesn't",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "won't",
        "didn't",
    ]
)
# Pairs of words whose swap often turns a caption into its contradiction in SNLI-style data.
ANTONYMS = (
    ("man", "woman"), ("men", "women"), ("boy", "girl"), ("boys", "girls"), ("dog", "cat"),
    ("sitting", "standing"), ("sits", "stands"), ("inside", "outside"), ("indoors", "outdoors"),
    ("day", "night"), ("sleeping", "running"), ("sleeping", "walking"), ("asleep", "awake"),
    ("empty", "full"), ("young", "old"), ("alone", "together"), ("wet", "dry"), ("black", "white"),
)  # fmt: skip
# Hypothesis words that lean one way in SNLI-style data whatever the premise (Gururangan et al. 2018).
CONTRADICTION_WORDS = frozenset(
    ["sleeping", "asleep", "sleeps", "nap", "nobody", "cat", "naked", "alone", "tv", "television", "couch", "bed"]
)
ENTAILMENT_WORDS = frozenset(
    ["outdoors", "outside", "person", "people", "some", "there", "animal", "instrument", "someone", "human", "humans"]
)
OVERLAP_FOR_ENTAILMENT = 0.6
OVERLAP_WITH_ENTAILMENT_WORD = 0.35

_WORD = re.compile(r"[a-z']+")


def words(sentence: str) -> list[str]:
    return _WORD.findall(sentence.lower())


def has_contradiction_cue(premise_words: set[str], hypothesis_words: set[str]) -> bool:
    if (hypothesis_words & NEGATION_CUES) and not (premise_words & NEGATION_CUES):
        return True
    if (hypothesis_words & CONTRADICTION_WORDS) and not (premise_words & CONTRADICTION_WORDS):
        return True
    return any(
        (a in premise_words and b in hypothesis_words and b not in premise_words)
        or (b in premise_words and a in hypothesis_words and a not in premise_words)
        for a, b in ANTONYMS
    )


def rule_label(premise: str, hypothesis: str) -> str:
    """ "entailment", "neutral" or "contradiction" by the rule above (deterministic: bots share it)."""
    premise_words, hypothesis_words = set(words(premise)), set(words(hypothesis))
    if has_contradiction_cue(premise_words, hypothesis_words):
        return "contradiction"
    overlap = len(hypothesis_words & premise_words) / max(1, len(hypothesis_words))
    if overlap >= OVERLAP_FOR_ENTAILMENT or (
        hypothesis_words & ENTAILMENT_WORDS and overlap >= OVERLAP_WITH_ENTAILMENT_WORD
    ):
        return "entailment"
    return "neutral"
