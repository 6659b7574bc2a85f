"""Typing records as typing_evidence.js writes them, for the tests, and a claim made to look as old
as a person's typing takes (the server judges a record against its claim's lifetime)."""

import json
from datetime import timedelta

from collection.models import WritingClaim


def typed(text: str, *, mean_ms: float = 230.0, first_key_ms: int = 3000) -> dict:
    """A field typed key by key with two corrections: figures that add up, and intervals with a
    person's long right tail (skewness 1.5)."""
    intervals = len(text) + 1
    return {
        "k": len(text) + 4,
        "d": 2,
        "t": len(text),
        "fk": first_key_ms,
        "n": intervals,
        "m": mean_ms,
        "cv": 0.5,
        "sk": 1.5,
        "tt": round(intervals * mean_ms),
        "len": len(text),
    }


def page(fields: dict[str, dict], *, open_ms: int = 60_000) -> str:
    return json.dumps({"v": 1, "open": open_ms, "away": 0, "awayMs": 0, "fields": fields})


def age_claim(token, seconds: float = 120) -> None:
    """The claim handed out `seconds` ago, as if the participant had been typing since."""
    claim = WritingClaim.objects.get(token=token)
    WritingClaim.objects.filter(pk=claim.pk).update(created_at=claim.created_at - timedelta(seconds=seconds))
