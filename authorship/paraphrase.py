"""Template signatures: the part of a hypothesis that did not come from its premise. Honest writers
build a hypothesis from their premise, so once the premise's own words are slotted out little is
left besides function words; a template written over any premise keeps its own words.

signature("The crowd listens to a band", premise "A band plays in a park")
    -> ("the", "crowd", "listen", "to", "a", "_")

Words are compared as rough lemmas, with no model: this runs at submit for every hypothesis and in
a migration, so it must cost microseconds and load nothing.
"""

import re
import unicodedata
from collections.abc import Sequence

SLOT = "_"

# Function words: they carry no content, so they neither make two sentences alike nor count as
# the template's own words. Negations and quantifiers stay content ("nobody", "no" are the
# template's choice, not grammar).
FUNCTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        """
        a an the this that these those there here it its they them their he him his she her we us our
        you your i me my is are was were be been being am do does did has have had will would can could
        should may might must shall of in on at to for from with by as into onto about over under near
        and or but so than then while if because up down out off some any each other another one two
        very just also too s
        """,
    )
)

IRREGULAR_LEMMAS = {
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "ran": "run",
    "sat": "sit",
    "ate": "eat",
    "went": "go",
    "gone": "go",
    "wore": "wear",
    "worn": "wear",
    "held": "hold",
    "rode": "ride",
    "swam": "swim",
    "took": "take",
    "made": "make",
    "stood": "stand",
}

_WORD = re.compile(r"\w+")


def _fold_doubled_consonant(stem: str) -> str:
    """running -> runn -> run; but keep "dress" and "fall"."""
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]
    return stem


def lemma(word: str) -> str:
    """A rough lemma: enough that "runs", "running" and "ran" meet, without a dictionary."""
    if word in IRREGULAR_LEMMAS:
        return IRREGULAR_LEMMAS[word]
    if len(word) <= 3 or word in FUNCTION_WORDS:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("ing") and len(word) > 5:
        return _fold_doubled_consonant(word[:-3])
    if word.endswith("ed") and len(word) > 4:
        return _fold_doubled_consonant(word[:-2])
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def lemmas(text: str) -> list[str]:
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return [lemma(word) for word in words]


def signature(hypothesis: str, premise: str) -> tuple[str, ...]:
    """The hypothesis's lemmas, each content word its premise also has replaced by SLOT."""
    from_premise = set(lemmas(premise)) - FUNCTION_WORDS
    return tuple(SLOT if word in from_premise else word for word in lemmas(hypothesis))


def own_words(signature: Sequence[str]) -> frozenset[str]:
    """The content words the hypothesis did not take from its premise."""
    return frozenset(word for word in signature if word != SLOT and word not in FUNCTION_WORDS)


def word_edits(first: Sequence[str], second: Sequence[str]) -> int:
    """Words to insert, delete or replace to turn one sentence into the other (Levenshtein on words)."""
    previous = list(range(len(second) + 1))
    for row, word in enumerate(first, 1):
        current = [row]
        for column, other in enumerate(second, 1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (word != other)))
        previous = current
    return previous[-1]


# Stored lengths (authorship.WrittenSentence): a signature of at most MAX_SIGNATURE_CHARS, own
# words of at most MAX_WORD_CHARS each (longer "words" are keyboard runs, not template words).
MAX_SIGNATURE_CHARS = 300
MAX_WORD_CHARS = 40


def stored_signature(hypothesis: str, premise: str) -> tuple[str, list[str]]:
    """The signature as stored (words one space apart, cut at a word) and its own words, sorted."""
    words = signature(hypothesis, premise)
    text = " ".join(words)
    if len(text) > MAX_SIGNATURE_CHARS:
        text = text[: text.rfind(" ", 0, MAX_SIGNATURE_CHARS + 1)]
    return text, sorted(word[:MAX_WORD_CHARS] for word in own_words(text.split()))
