"""The writing rules of every task that creates a hypothesis, Django-free: `hypothesis_problem`
judges one hypothesis against a task's `TaskRules` (length, words, markup, one sentence, sameness)
and `writing_problem` (what counts as writing). Hypotheses are compared after Unicode normalisation
(NFKC, casefold) and confusable folding (look-alike letters become their Latin twins), and must hold
real English words (`wordfreq`'s list, shipped with it: nothing is downloaded at run time).

Each rule was checked against junk strategies and against every hypothesis of the SNLI dev set
(none refused; bench/RESULTS-input.md). Last, a hypothesis must read as a sentence
(`sentence_shape`), as the study's `shape_check` says.
"""

import re
import string
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from confusable_homoglyphs import confusables

from .premise_text import split_sentences
from .sentence_shape import REFUSE_AT, SHAPE_REFUSE, ShapeRules, load_sentence_model, shape_problem

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


def folded_words(text: str | None) -> list[str]:
    """The words of a text as the rules compare them: runs of letters (an apostrophe inside), `folded`."""
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
    """Load wordfreq's English list and the sentence-shape parser now instead of on the first check:
    a web server calls this at start, so no worker's first submit in a process waits for it."""
    is_english_word("the")
    load_sentence_model()


def writing_problem(premise: str, hypothesis: str, *, others: Iterable[str] = ()) -> str | None:
    """Why `hypothesis` is not writing (a message for the worker), or None."""
    tokens = folded_words(hypothesis)
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
    added = len(tokens) - len(folded_words(premise))
    if premise_spaced[-1:] in (".", "!", "?") and spaced.startswith(premise_spaced) and added <= 2:
        return "This repeats the line above with a word added. Please write a new sentence."
    for other in others:
        if sameness_key(other) and sameness_key(other) == key:
            return "This is the same as another of your sentences. Each of the three must differ."
    return None


# --- one hypothesis against a task's rules -----------------------------------------------------


@dataclass(frozen=True)
class TaskRules:
    """What a problem report does and what a hypothesis must be (a study's, else these defaults).
    `max_reports_per_batch`: reports one worker may send in one study visit (or, outside a study,
    unresolved reports at a time)."""

    reports_to_hold_premise: int = 2
    max_reports_per_batch: int = 2
    min_hypothesis_words: int = 3
    max_hypothesis_sentences: int = 1
    max_hypothesis_chars: int = 500
    max_report_chars: int = 500
    shape_check: str = SHAPE_REFUSE
    shape_refuse_at: int = REFUSE_AT

    @property
    def shape(self) -> ShapeRules:
        return ShapeRules(check=self.shape_check, refuse_at=self.shape_refuse_at)


# Characters a reader cannot see: zero-width spaces and joiners, bidi marks, soft hyphens (Unicode
# category C*), and letters that render as blanks (Hangul fillers, the blank Braille pattern).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_WORD = re.compile(r"\w+")


def visible_text(text: str | None) -> str:
    """Text with invisible and control characters removed and whitespace runs made one space."""
    kept = []
    for char in text or "":
        if char.isspace():
            kept.append(" ")
        elif unicodedata.category(char)[0] == "C" or char in _BLANK_LETTERS:
            continue
        else:
            kept.append(char)
    return " ".join("".join(kept).split())


def lettered_word_count(text: str) -> int:
    """Words: runs of word characters that hold at least one letter ("3" and "_" are not words)."""
    return sum(1 for word in _WORD.findall(text) if any(char.isalpha() for char in word))


def word_characters(text: str) -> int:
    return sum(len(word) for word in _WORD.findall(text))


_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}“”‘’«»…–—]")


def normalised(text: str) -> str:
    """Text as compared for sameness: case, whitespace and punctuation do not count."""
    return " ".join(_PUNCTUATION.sub(" ", text).lower().split())


# Markup a hypothesis is not: HTML/XML tags and entities, Markdown links, images and code, URLs.
MARKUP = re.compile(
    r"<\s*/?\s*[A-Za-z!][^>]*>"  # <b>, </p>, <!-- -->, <script ...>
    r"|&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);"  # &amp; &#39;
    r"|!?\[[^\]]*\]\([^)]*\)"  # [text](url), ![alt](src)
    r"|```|`[^`\s][^`]*`"  # code (a lone backtick is a typo for an apostrophe: SNLI has two)
    r"|\b(?:https?://|www\.)\S"  # links
)


def hypothesis_problem(
    premise_text: str,
    text: str,
    rules: TaskRules,
    *,
    others: Iterable[str] = (),
    named: Mapping[str, str] | None = None,
    confirmed: Collection[str] | None = None,
) -> str | None:
    """Why one hypothesis (as `visible_text` leaves it) is not writing (a message for the worker), or
    None. The rules of every task that creates a hypothesis: what one task refuses, no other takes.

    `others`: the worker's other sentences this one must differ from; `named`: those of them by
    their `normalised` text, with the name the message gives them; `confirmed`: the `normalised`
    texts the writer was already warned about for their shape, None where no warning can be
    recorded (warnings pass)."""
    key = normalised(text)
    if not text:
        return "Please write a sentence here."
    if len(text) > rules.max_hypothesis_chars:
        return f"Please keep this under {rules.max_hypothesis_chars} characters (it has {len(text)})."
    if not key or word_characters(text) < 2:
        return "Please write a sentence in words, not only punctuation or symbols."
    if MARKUP.search(text):
        return "Please write plain words: markup such as HTML tags, links or code is not taken."
    if lettered_word_count(text) < rules.min_hypothesis_words:
        words = "word" if rules.min_hypothesis_words == 1 else "words"
        return f"Please write a whole sentence of at least {rules.min_hypothesis_words} {words}."
    sentences = len(split_sentences(text))
    if sentences > rules.max_hypothesis_sentences:
        most = "one sentence" if rules.max_hypothesis_sentences == 1 else f"{rules.max_hypothesis_sentences} sentences"
        return f"Please write {most}, not a paragraph (this has {sentences})."
    if key == normalised(premise_text):
        return "This repeats the line above. Please write a new sentence."
    if named and key in named:
        return f"This is the same as your '{named[key]}' sentence. Each of the three must differ."
    # The parse last: it costs the most (a few milliseconds), and junk the cheaper rules name is
    # better told by them.
    if problem := writing_problem(premise_text, text, others=others):
        return problem
    return shape_problem(text, rules.shape, confirmed=None if confirmed is None else key in confirmed)
