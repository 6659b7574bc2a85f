"""Judgements from typing evidence: pure functions of the numbers (authorship.evidence); thresholds
and false-flag rates (bench/typing_evidence.py) are in docs/quality.md, "How hypotheses were written".

Human pace (Dhakal et al. 2018, CHI '18, Table 1): 51.56 words a minute on average, SD 20.20
between typists; W words a minute is 12,000 / W ms a character. The floors below are upper
percentiles of that distribution, never a fraction of the mean: a page is too fast when even the
99.9th-percentile typist, without a pause, could not have typed it in the time it was open.

Shape: a person's intervals have a long right tail, so their skewness is positive; a program that
jitters an even pace has a symmetric spread, which the CV alone cannot tell from a person's.
"""

import difflib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from enum import StrEnum

from .evidence import FieldEvidence, PageEvidence

# "Most of the text" arrived one way: more than half of the final characters.
MOST_OF_THE_TEXT = 0.5
# Cadence: judged only with enough intervals to have a spread (a short sentence's ten keys).
MIN_INTERVALS_FOR_CADENCE = 10
# Dhakal et al. 2018, Table 1: words a minute over 168,000 typists (mean, SD between typists).
HUMAN_WPM_MEAN, HUMAN_WPM_SD = 51.56, 20.20
MS_PER_CHAR_AT_ONE_WPM = 12_000  # five characters a word, 60,000 ms a minute
# z of the normal's 99.9th and 99.99th percentiles.
Z_999, Z_9999 = 3.090, 3.719
# A page's pace floor: the 99.9th-percentile typist (114 words a minute), 105 ms a character.
FASTEST_MS_PER_CHAR = MS_PER_CHAR_AT_ONE_WPM / (HUMAN_WPM_MEAN + Z_999 * HUMAN_WPM_SD)
# One sentence's mean interval: the 99.99th percentile (127 words a minute), 95 ms; further out than
# the page's floor, as one sentence is a small sample and its mean leaves out pauses over 2 s.
FASTEST_HUMAN_MEAN_MS = MS_PER_CHAR_AT_ONE_WPM / (HUMAN_WPM_MEAN + Z_9999 * HUMAN_WPM_SD)
# More even than people type: a coefficient of variation of the intervals under this.
MOST_EVEN_HUMAN_CV = 0.2
# Near-copies of the writer's own earlier sentence (difflib's ratio of the normalised texts).
NEAR_COPY_RATIO = 0.9
# An honest record's browser-measured times fit inside the claim's lifetime by the server's clock;
# the tolerance covers two hosts' clocks a little apart and a browser clock running fast.
CLOCK_TOLERANCE_MS = 2000
CLOCK_TOLERANCE_SHARE = 0.02
# The shape of a page's intervals, judged with at least this many (three sentences have 100 or more).
# Below LEAST_HUMAN_SKEW the spread is symmetric: bench/typing_evidence.py's simulated typists stay
# above it, a uniform jitter's centre on 0 (docs/quality.md gives the figures).
MIN_INTERVALS_FOR_SHAPE = 60
LEAST_HUMAN_SKEW = 0.1
# typing_evidence.js leaves gaps of 2 s or more out of the intervals (thinking, not typing).
LONGEST_INTERVAL_MS = 2000
# The mean interval is sent rounded to 0.1 ms and the typing time to 1 ms (kept across a reload):
# typing time and intervals x mean may differ by this much and still be one record.
INTERVAL_ROUNDING_MS = 0.1
# A session is flagged (and, where the study says so, its code held) once this share of its
# hypotheses is flagged: one prepared sentence in three is no accident of a stray paste.
SESSION_FLAGGED_SHARE = 1 / 3


class Flag(StrEnum):
    PASTED = "pasted"  # most of the text arrived by paste or drop
    NOT_TYPED = "not-typed"  # most of it came from input no keystroke produced (script, synthetic events)
    MACHINE_CADENCE = "machine-cadence"  # keys faster or more even than people type
    PASTED_AFTER_AWAY = "pasted-after-away"  # written elsewhere (another tab had focus), then pasted
    REPEATED = "repeated"  # a near-copy of the writer's own sentence on another premise
    COPY = "copy"  # a near-copy of another writer's sentence, or this writer's in another session
    NO_EVIDENCE = "no-evidence"  # the browser sent no typing record (no script, a broken value, a bot)
    # The record's times are longer than the task had been open by the server's clock: forged or replayed.
    TIMES_OUTSIDE_CLAIM = "times-outside-claim"
    TOO_FAST = "too-fast"  # the page arrived sooner after the task was served than its text takes to type


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


def has_typing_record(evidence: FieldEvidence) -> bool:
    """The record's keys could have typed: intervals with a time, no more intervals than pairs of
    keys, each interval under the pause the script leaves out, and a typing time that is the
    intervals' sum. A record with no intervals, only zeros or figures that do not add up is not one."""
    if evidence.intervals < 1 or evidence.typing_ms <= 0 or not evidence.interval_mean_ms:
        return False
    if evidence.intervals > evidence.keystrokes - 1:
        return False
    if evidence.typing_ms >= evidence.intervals * LONGEST_INTERVAL_MS:
        return False
    rounding = INTERVAL_ROUNDING_MS * evidence.intervals + 2
    return abs(evidence.typing_ms - evidence.intervals * evidence.interval_mean_ms) <= rounding


def unkeyed_typed_chars(evidence: FieldEvidence) -> int:
    """Characters counted as typed that no recorded keystroke accounts for: all of them when the record has no
    typing in it (more than one character typed with no interval, only zeros, figures that do not
    add up), else those beyond one character per keystroke."""
    if evidence.typed <= 1:
        return 0
    if not has_typing_record(evidence):
        return evidence.typed
    return max(0, evidence.typed - evidence.keystrokes)


def not_typed_chars(evidence: FieldEvidence, text_chars: int, restorable_chars: int = 0) -> int:
    """Characters of the text no trusted keystroke produced: set by a script, synthetic events, a
    program inserting text, "typed" with no keystroke to show for it, nothing the record explains,
    and text already in the field when the page opened beyond `restorable_chars` (the participant's
    own text of this task that the server put back: an adversarial task's last try)."""
    return (
        evidence.untrusted
        + evidence.scripted
        + evidence.unkeyed
        + unkeyed_typed_chars(evidence)
        + max(0, evidence.prefilled - restorable_chars)
        + unexplained_chars(evidence, text_chars)
    )


def is_not_typed(evidence: FieldEvidence, text_chars: int, restorable_chars: int = 0) -> bool:
    """Most of the text came from input no trusted keystroke produced (`not_typed_chars`)."""
    return _most(not_typed_chars(evidence, text_chars, restorable_chars), text_chars)


def clock_allowance_ms(open_ms: int) -> float:
    """How long a record may claim for a task open `open_ms` by the server's clock."""
    return open_ms * (1 + CLOCK_TOLERANCE_SHARE) + CLOCK_TOLERANCE_MS


def times_outside_claim(evidence: FieldEvidence, page_open_ms: int, claim_open_ms: int) -> bool:
    """The page's open time, the field's first key, or its first key and typing time together, are
    longer than the task had been open by the server's clock (every key comes after the page opened,
    and every counted interval after the first key, across reloads too)."""
    allowed = clock_allowance_ms(claim_open_ms)
    first_key = evidence.first_key_ms or 0
    return page_open_ms > allowed or first_key > allowed or first_key + evidence.typing_ms > allowed


def page_typing_outside_claim(fields: Sequence[FieldEvidence], claim_open_ms: int) -> bool:
    """The page's fields claim more typing, together, than the task had been open by the server's
    clock. One person types into one field at a time, so the fields' typing times add up, and none
    of it comes before the page's first key: each field fitting on its own is not enough (three
    fields can each claim the same seconds)."""
    typed = [field for field in fields if field.typing_ms > 0]
    if not typed:
        return False
    first_key = min(field.first_key_ms or 0 for field in typed)
    return first_key + sum(field.typing_ms for field in typed) > clock_allowance_ms(claim_open_ms)


def too_fast(text_chars: int, claim_open_ms: int) -> bool:
    """`text_chars` characters could not have been typed in the time the task was open."""
    return text_chars * FASTEST_MS_PER_CHAR > clock_allowance_ms(claim_open_ms)


def has_machine_cadence(evidence: FieldEvidence) -> bool:
    """Typed faster or more evenly than people type (enough intervals to tell)."""
    if evidence.intervals < MIN_INTERVALS_FOR_CADENCE or evidence.interval_mean_ms is None:
        return False
    if evidence.interval_mean_ms < FASTEST_HUMAN_MEAN_MS:
        return True
    return evidence.interval_cv is not None and evidence.interval_cv < MOST_EVEN_HUMAN_CV


def has_machine_shape(fields: Sequence[FieldEvidence]) -> bool:
    """The page's intervals, with enough of them to tell, are spread symmetrically (their skewness,
    weighted by each field's intervals, under LEAST_HUMAN_SKEW): an even pace with a jitter, not a
    person's long-tailed one. A field whose record leaves the skewness out counts as symmetric: the
    page's script always sends it."""
    judged = [field for field in fields if field.intervals >= 3]
    intervals = sum(field.intervals for field in judged)
    if intervals < MIN_INTERVALS_FOR_SHAPE:
        return False
    weighted = sum(field.intervals * (field.interval_skew or 0.0) for field in judged)
    return weighted / intervals < LEAST_HUMAN_SKEW


def is_pasted_after_away(evidence: FieldEvidence, text_chars: int) -> bool:
    """Most of the text was pasted as the field's first input after the participant came back from
    another tab or window: written there, then brought in."""
    return _most(evidence.pasted_after_away, text_chars)


def field_flags(evidence: FieldEvidence | None, text: str, *, restorable_chars: int = 0) -> list[Flag]:
    """Every flag one field's evidence earns (an empty field earns none)."""
    text_chars = len(text)
    if not text_chars:
        return []
    if evidence is None:
        return [Flag.NO_EVIDENCE]
    flags = []
    if is_pasted(evidence, text_chars):
        flags.append(Flag.PASTED)
    if is_not_typed(evidence, text_chars, restorable_chars):
        flags.append(Flag.NOT_TYPED)
    if has_machine_cadence(evidence):
        flags.append(Flag.MACHINE_CADENCE)
    if is_pasted_after_away(evidence, text_chars):
        flags.append(Flag.PASTED_AFTER_AWAY)
    return flags


def page_field_flags(
    evidence: PageEvidence | None,
    texts: dict[str, str],
    *,
    claim_open_ms: int | None = None,
    restorable_chars: Mapping[str, int] | None = None,
) -> dict[str, list[Flag]]:
    """Flags per field name of one page's texts. `claim_open_ms`: how long the task had been open by
    the server's clock when the page arrived; the record's times, each field's and all together, must
    fit inside it, and the page's text must take at least that long to type (None: no clock).
    `restorable_chars`: per field, text the server itself put back (`not_typed_chars`). The cadence's
    shape is judged over the page's fields together (one sentence is too small a sample)."""
    restorable = restorable_chars or {}
    recorded = [] if evidence is None else [evidence.fields[name] for name in texts if name in evidence.fields]
    page_too_fast = claim_open_ms is not None and too_fast(sum(map(len, texts.values())), claim_open_ms)
    page_outside = claim_open_ms is not None and page_typing_outside_claim(recorded, claim_open_ms)
    machine_shape = has_machine_shape(recorded)
    flags = {}
    for name, text in texts.items():
        found = None if evidence is None else evidence.fields.get(name)
        field = field_flags(found, text, restorable_chars=restorable.get(name, 0))
        if (
            text
            and machine_shape
            and found is not None
            and found.intervals >= MIN_INTERVALS_FOR_CADENCE
            and Flag.MACHINE_CADENCE not in field
        ):
            field.append(Flag.MACHINE_CADENCE)
        if text and claim_open_ms is not None:
            if (
                found is not None
                and evidence is not None
                and (page_outside or times_outside_claim(found, evidence.open_ms, claim_open_ms))
            ):
                field.append(Flag.TIMES_OUTSIDE_CLAIM)
            if page_too_fast:
                field.append(Flag.TOO_FAST)
        flags[name] = field
    return flags


# Every flag says a sentence was not typed by the participant, or that nothing shows it was: a page
# without a typing record is flagged too, since a bot can always leave the record out.
AUTHORSHIP_FLAGS = frozenset(Flag)
# The flags the typing record itself raises (how the sentence arrived in the field), apart from
# the ones that compare its text with other sentences (`REPEATED`, `COPY`): a hand-typed sentence
# its writer reused is repeated, not untyped.
TYPING_FLAGS = AUTHORSHIP_FLAGS - {Flag.REPEATED, Flag.COPY}
# What a study that refuses pasted text refuses in the field (cadence is a weaker sign: recorded only).
REFUSED_FLAGS = frozenset(
    {Flag.PASTED, Flag.NOT_TYPED, Flag.PASTED_AFTER_AWAY, Flag.NO_EVIDENCE, Flag.TIMES_OUTSIDE_CLAIM, Flag.TOO_FAST}
)


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
