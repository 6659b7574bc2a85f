"""How a hypothesis relates to its premise, word by word (MultiNLI §2.2 "Statistics").

MultiNLI reports the share of hypotheses that differ from their premise only by deleting words,
that differ by one inserted, substituted or moved word, and that share more than 37% of their
tokens with the premise (SNLI: 2%, 1%, ~29%; MultiNLI: <1%, <1%, 30%). Tokens are lower-cased
words with punctuation stripped.

The paper does not define its overlap; ours is the number of distinct words the two sentences
share over the distinct words of the longer one. (Measured on SNLI dev: 26%, near the paper's
29% for SNLI; "share of the hypothesis's words found in the premise" would give 65%, because
short hypotheses reuse "a", "the", "man" from their premise.)
"""

import re
from collections import Counter
from collections.abc import Iterable, Sequence

OVERLAP_THRESHOLD = 0.37
_TOKEN = re.compile(r"[\w']+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def is_subsequence(short: Sequence[str], long: Iterable[str]) -> bool:
    remaining = iter(long)
    return all(token in remaining for token in short)


def only_deletion(premise: list[str], hypothesis: list[str]) -> bool:
    """The hypothesis is the premise with one or more words left out."""
    return len(hypothesis) < len(premise) and is_subsequence(hypothesis, premise)


def one_word_edit(premise: list[str], hypothesis: list[str]) -> bool:
    """One word inserted, substituted, or moved elsewhere; the rest unchanged and in order."""
    if len(hypothesis) == len(premise) + 1:
        return is_subsequence(premise, hypothesis)
    if len(hypothesis) != len(premise) or hypothesis == premise:
        return False
    if sum(p != h for p, h in zip(premise, hypothesis, strict=False)) == 1:
        return True
    if Counter(premise) != Counter(hypothesis):
        return False
    for i, word in enumerate(premise):
        rest = premise[:i] + premise[i + 1 :]
        for j, other in enumerate(hypothesis):
            if other == word and hypothesis[:j] + hypothesis[j + 1 :] == rest:
                return True
    return False


def overlap(premise: Iterable[str], hypothesis: Iterable[str]) -> float:
    premise_words, hypothesis_words = set(premise), set(hypothesis)
    larger = max(len(premise_words), len(hypothesis_words))
    return len(premise_words & hypothesis_words) / larger if larger else 0.0


# A pair's relations as a bit mask: what the maintained aggregates count (corpus.tallies).
ONLY_DELETION, ONE_WORD_EDIT, HIGH_OVERLAP = 1, 2, 4
RELATION_BITS = {"only_deletion": ONLY_DELETION, "one_word_edit": ONE_WORD_EDIT, "high_overlap": HIGH_OVERLAP}


def relation_mask(premise_text: str, hypothesis_text: str) -> int:
    premise, hypothesis = tokens(premise_text), tokens(hypothesis_text)
    return (
        ONLY_DELETION * only_deletion(premise, hypothesis)
        | ONE_WORD_EDIT * one_word_edit(premise, hypothesis)
        | HIGH_OVERLAP * (overlap(premise, hypothesis) > OVERLAP_THRESHOLD)
    )
