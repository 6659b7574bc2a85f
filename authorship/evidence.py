"""The typing evidence a browser posts (static/js/typing_evidence.js), read without trusting it: per
text field, counts of keys and characters by the way they arrived, timings and the intervals'
mean, CV and skewness; per page, the times the participant left it. Never a key or a text. Anything
else is "no evidence". Every number is checked and bounded, so a forged value can make a sentence
look typed, never break a page or a figure.
"""

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_EVIDENCE_CHARS = 8000  # a page's JSON: a few fields of a dozen numbers each
MAX_COUNT = 100_000  # keystrokes, characters, events: far above any sentence's
MAX_MS = 24 * 3600 * 1000  # a day: no task stays open longer
MAX_CV = 100.0
# A sample's skewness is at most about its size's square root in either direction: far inside this.
MAX_SKEW = 1000.0


@dataclass(frozen=True)
class FieldEvidence:
    """How one text field was filled in, as the browser counted it, in characters of the text as sent
    (a pasted sentence deleted and then typed counts as typed). typed: right after a trusted keystroke
    (or an input method's composition); pasted / dropped: by paste or drag and drop; untrusted: by
    input events no trusted user event produced; scripted: set by a script between input events;
    unkeyed: by trusted input with no keystroke before it (autofill, dictation); prefilled: in the
    field when the page opened; pasted_after_away: pasted as the field's first input after the
    participant came back from another tab or window.
    """

    keystrokes: int = 0
    deletions: int = 0
    typed: int = 0
    pasted: int = 0
    dropped: int = 0
    untrusted: int = 0
    scripted: int = 0
    unkeyed: int = 0
    prefilled: int = 0
    pasted_after_away: int = 0
    refused_pastes: int = 0
    first_key_ms: int | None = None
    typing_ms: int = 0
    intervals: int = 0
    interval_mean_ms: float | None = None
    interval_cv: float | None = None
    interval_skew: float | None = None


@dataclass(frozen=True)
class PageEvidence:
    """A page's evidence: per field name, and how often and how long the participant was away."""

    fields: dict[str, FieldEvidence]
    open_ms: int = 0
    away_count: int = 0
    away_ms: int = 0


# JSON key -> (FieldEvidence attribute, bound); the keys are short because every submit carries them.
COUNT_KEYS = {
    "k": "keystrokes",
    "d": "deletions",
    "t": "typed",
    "p": "pasted",
    "dr": "dropped",
    "u": "untrusted",
    "s": "scripted",
    "nk": "unkeyed",
    "pre": "prefilled",
    "ap": "pasted_after_away",
    "rp": "refused_pastes",
    "n": "intervals",
}


def _bounded_float(value: Any, bound: float) -> float | None:
    """A non-negative number up to `bound`, or None for anything else (bools, text, NaN)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(min(value, bound))


def _signed_bounded_float(value: Any, bound: float) -> float | None:
    """A number within +-`bound`, or None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(max(-bound, min(value, bound)))


def _bounded_int(value: Any, bound: int) -> int | None:
    """`_bounded_float`, whole (a fraction cut off)."""
    bounded = _bounded_float(value, bound)
    return None if bounded is None else int(bounded)


def read_field(raw: Any) -> FieldEvidence | None:
    """One field's evidence from its JSON object, or None when it is not an object."""
    if not isinstance(raw, dict):
        return None
    counts = {attr: _bounded_int(raw.get(key, 0), MAX_COUNT) or 0 for key, attr in COUNT_KEYS.items()}
    first_key = _bounded_int(raw.get("fk"), MAX_MS)
    mean = _bounded_float(raw.get("m"), MAX_MS) if counts["intervals"] else None
    cv = _bounded_float(raw.get("cv"), MAX_CV) if counts["intervals"] >= 2 else None
    skew = _signed_bounded_float(raw.get("sk"), MAX_SKEW) if counts["intervals"] >= 3 else None
    return FieldEvidence(
        **counts,
        first_key_ms=first_key,
        typing_ms=_bounded_int(raw.get("tt", 0), MAX_MS) or 0,
        interval_mean_ms=mean,
        interval_cv=cv,
        interval_skew=skew,
    )


def read_evidence(raw: str | None, field_names: Iterable[str]) -> PageEvidence | None:
    """The page's evidence for the named fields, or None when there is none to read."""
    if not raw or not isinstance(raw, str) or len(raw) > MAX_EVIDENCE_CHARS:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("v") != 1 or not isinstance(data.get("fields"), dict):
        return None
    fields = {}
    for name in field_names:
        found = read_field(data["fields"].get(name))
        if found is not None:
            fields[name] = found
    return PageEvidence(
        fields=fields,
        open_ms=_bounded_int(data.get("open", 0), MAX_MS) or 0,
        away_count=_bounded_int(data.get("away", 0), MAX_COUNT) or 0,
        away_ms=_bounded_int(data.get("awayMs", 0), MAX_MS) or 0,
    )
