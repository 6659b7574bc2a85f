"""Judgements from typing evidence: pure functions of the numbers (authorship.evidence), each tested
on its own (tests/authorship/test_judgements.py). Their thresholds and the false-flag rates measured
by bench/typing_evidence.py are in docs/quality.md, "How hypotheses were written".

Human cadence (Dhakal, Feit, Kristensson and Oulasvirta 2018, "Observations on Typing from 136
Million Keystrokes", CHI '18; 168,000 typists): the mean inter-key interval is about 239 ms
(SD about 112 ms between typists); the fastest typists keep about 120 ms. A program that types
fires keys at one even pace: intervals far below any typist's, or intervals whose coefficient of
variation is far below the spread of a person's (letter pairs, word boundaries and corrections
make a person's intervals vary by tens of percent).
"""

import difflib
import re
import unicodedata
from collections.abc import Sequence
from enum import StrEnum

from .evidence import FieldEvidence, PageEvidence

# "Most of the text" arrived one way: more than half of the final characters.
MOST_OF_THE_TEXT = 0.5
# Cadence: judged only with enough intervals to have a spread (a short sentence's ten keys).
MIN_INTERVALS_FOR_CADENCE = 10
# Faster than people sustain: a mean interval under 75 ms is 160 words a minute (12,000 / ms), beyond all
# but champion typists; Dhakal et al. report ~120 ms for fast typists.
FASTEST_HUMAN_MEAN_MS = 75.0
# More even than people type: a coefficient of variation of the intervals under this.
MOST_EVEN_HUMAN_CV = 0.2
# Near-copies of the writer's own earlier sentence (difflib's ratio of the normalised texts).
NEAR_COPY_RATIO = 0.9
# A session is flagged (and, where the study says so, its code held) once this share of its
# hypotheses is flagged: one prepared sentence in three is no accident of a stray paste.
SESSION_FLAGGED_SHARE = 1 / 3


class Flag(StrEnum):
    PASTED = "pasted"  # most of the text arrived by paste or drop
    NOT_TYPED = "not-typed"  # most of it came from input no keystroke produced (script, synthetic events)
    MACHINE_CADENCE = "machine-cadence"  # keys faster or more even than people type
    PASTED_AFTER_AWAY = "pasted-after-away"  # written elsewhere (another tab had focus), then pasted
    REPEATED = "repeated"  # a near-copy of the writer's own sentence on another premise
    NO_EVIDENCE = "no-evidence"  # the browser sent none (no script, old browser, broken value)


def _most(chars: int, text_chars: int) -> bool:
    return text_chars > 0 and chars > MOST_OF_THE_TEXT * text_chars


def unexplained_chars(evidence: FieldEvidence, text_chars: int) -> int:
    """Characters of the final text that no recorded input put there (a forged or partial record)."""
    arrived = (
        evidence.typed
        + evidence.pasted
        + evidence.dropped
        + evidence.untrusted
        + evidence.scripted
        + evidence.unkeyed
        + evidence.prefilled
    )
    return max(0, text_chars - arrived)


def is_pasted(evidence: FieldEvidence, text_chars: int) -> bool:
    """Most of the text arrived by paste or drop."""
    return _most(evidence.pasted + evidence.dropped, text_chars)


def is_not_typed(evidence: FieldEvidence, text_chars: int) -> bool:
    """Most of the text came from input no trusted keystroke produced: a script setting the value,
    synthetic events, a program inserting text, or nothing the record explains."""
    produced = evidence.untrusted + evidence.scripted + evidence.unkeyed + unexplained_chars(evidence, text_chars)
    return _most(produced, text_chars)


def has_machine_cadence(evidence: FieldEvidence) -> bool:
    """Typed faster or more evenly than people type (enough intervals to tell)."""
    if evidence.intervals < MIN_INTERVALS_FOR_CADENCE or evidence.interval_mean_ms is None:
        return False
    if evidence.interval_mean_ms < FASTEST_HUMAN_MEAN_MS:
        return True
    return evidence.interval_cv is not None and evidence.interval_cv < MOST_EVEN_HUMAN_CV


def is_pasted_after_away(evidence: FieldEvidence, text_chars: int) -> bool:
    """Most of the text was pasted as the field's first input after the participant came back from
    another tab or window: written there, then brought in."""
    return _most(evidence.pasted_after_away, text_chars)


def field_flags(evidence: FieldEvidence | None, text: str) -> list[Flag]:
    """Every flag one field's evidence earns (an empty field earns none)."""
    text_chars = len(text)
    if not text_chars:
        return []
    if evidence is None:
        return [Flag.NO_EVIDENCE]
    flags = []
    if is_pasted(evidence, text_chars):
        flags.append(Flag.PASTED)
    if is_not_typed(evidence, text_chars):
        flags.append(Flag.NOT_TYPED)
    if has_machine_cadence(evidence):
        flags.append(Flag.MACHINE_CADENCE)
    if is_pasted_after_away(evidence, text_chars):
        flags.append(Flag.PASTED_AFTER_AWAY)
    return flags


def page_field_flags(evidence: PageEvidence | None, texts: dict[str, str]) -> dict[str, list[Flag]]:
    """Flags per field name of one page's texts."""
    return {
        name: field_flags(None if evidence is None else evidence.fields.get(name), text) for name, text in texts.items()
    }


# Flags that say a sentence was not typed by the participant (no evidence is no such sign).
AUTHORSHIP_FLAGS = frozenset({Flag.PASTED, Flag.NOT_TYPED, Flag.MACHINE_CADENCE, Flag.PASTED_AFTER_AWAY, Flag.REPEATED})
# What a study that refuses pasted text refuses in the field (cadence is a weaker sign: recorded only).
REFUSED_FLAGS = frozenset({Flag.PASTED, Flag.NOT_TYPED, Flag.PASTED_AFTER_AWAY})


def normalised_sentence(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.findall(r"\w+", text))


def is_near_copy(first: str, second: str) -> bool:
    a, b = normalised_sentence(first), normalised_sentence(second)
    if not a or not b:
        return False
    return a == b or difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= NEAR_COPY_RATIO


def repeated_sentences(earlier: Sequence[tuple[int, str]], new: Sequence[tuple[int, str]]) -> list[bool]:
    """For each new (premise id, text): is it a near-copy of the writer's own sentence on another
    premise, earlier or among the new ones?"""
    seen = list(earlier)
    found = []
    for premise_id, text in new:
        found.append(any(other != premise_id and is_near_copy(text, old) for other, old in seen))
        seen.append((premise_id, text))
    return found


def session_is_flagged(flagged: int, hypotheses: int) -> bool:
    """A session whose share of flagged hypotheses reaches SESSION_FLAGGED_SHARE (at least one)."""
    return flagged > 0 and flagged >= SESSION_FLAGGED_SHARE * hypotheses
