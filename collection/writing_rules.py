"""What counts as writing (Django-free): hypotheses are compared after Unicode normalisation (NFKC,
casefold) and confusable folding (look-alike letters from other scripts become their Latin twins,
by the Unicode confusables data of the `confusable_homoglyphs` package), and must hold real English
words (the `wordfreq` package's English list, shipped with it: nothing is downloaded at run time).

Each rule was checked against junk strategies (tests/collection/test_writing_rules.py) and against
every hypothesis of the SNLI dev set (none refused; bench/RESULTS-input.md).
"""

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from confusable_homoglyphs import confusables

# A word is English when wordfreq puts it above this (3 = once per million words): keyboard mash
# ("asdf" 1.7, "qwerty" 2.5) stays below, rare real words ("zebras" 2.8, "surfboard" 2.8) above.
REAL_WORD_ZIPF = 2.6
MIN_REAL_WORDS = 2  # English words in all ("a" and "I" count), one at least longer than a letter
# The share of a sentence's words that must be English (the language check).
MIN_ENGLISH_SHARE = 0.5
_TOKEN = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


@lru_cache(maxsize=4096)
def _latin_twin(char: str) -> str:
    if char.isascii() or not char.isalpha():
        return char
    found = confusables.is_confusable(char, preferred_aliases=["latin"], greedy=True) or []
    for entry in found:
        for glyph in entry["homoglyphs"]:
            if glyph["n"].startswith("LATIN") and glyph["c"].isascii():
                return glyph["c"].casefold()
    return char


def folded(text: str | None) -> str:
    """NFKC, casefolded, each look-alike letter replaced by its Latin twin."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    return "".join(_latin_twin(char) for char in text)


def words(text: str | None) -> list[str]:
    return _TOKEN.findall(folded(text))


def sameness_key(text: str | None) -> str:
    """What two texts must not share: their letters and digits alone (case, spaces, punctuation,
    look-alikes and compatibility forms do not count)."""
    return "".join(char for char in folded(text) if char.isalnum())


@lru_cache(maxsize=65536)
def is_english_word(word: str) -> bool:
    # Imported on first use: wordfreq (with numpy) costs a fresh process a few tenths of a second,
    # and every process imports this module (collection.services) whether it checks writing or not.
    from wordfreq import zipf_frequency

    return (len(word) > 1 or word in ("a", "i")) and zipf_frequency(word, "en") >= REAL_WORD_ZIPF


def load_word_list() -> None:
    """Load wordfreq's English list now instead of on the first check (~0.35 s in a fresh process):
    a web server calls this at start (annotation_site/wsgi.py), so no worker's first submit in a
    process waits for it."""
    is_english_word("the")


def writing_problem(premise: str, hypothesis: str, *, others: Iterable[str] = ()) -> str | None:
    """Why `hypothesis` is not writing (a message for the worker), or None."""
    tokens = words(hypothesis)
    english = [token for token in tokens if is_english_word(token)]
    if len(english) < MIN_REAL_WORDS or not any(len(token) > 1 for token in english):
        return "Please write a sentence in English words."
    if len(english) < MIN_ENGLISH_SHARE * len(tokens):
        return "Please write the sentence in English."
    if len(tokens) >= 4 and len(set(tokens)) < 0.5 * len(tokens):
        return "Please write a sentence, not the same words again and again."
    key, premise_key = sameness_key(hypothesis), sameness_key(premise)
    if premise_key and key.count(premise_key) > 1:
        return "This repeats the line above. Please write a new sentence."
    # The premise whole, its full stop included, and a word or two after it: not a new sentence. (A
    # word inside the premise's sentence, "... a rock face outside.", is how real hypotheses add detail.)
    spaced, premise_spaced = " ".join(folded(hypothesis).split()), " ".join(folded(premise).split())
    added = len(tokens) - len(words(premise))
    if premise_spaced[-1:] in (".", "!", "?") and spaced.startswith(premise_spaced) and added <= 2:
        return "This repeats the line above with a word added. Please write a new sentence."
    for other in others:
        if sameness_key(other) and sameness_key(other) == key:
            return "This is the same as another of your sentences. Each of the three must differ."
    return None
