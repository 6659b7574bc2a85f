"""Impossible typing evidence: records no typing could leave.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only typing_impossible

Four variants, three ids in each of the two studies (hold, refuse; bench/attacks/_typing.py), three
tasks each, canned sentences submitted at once:
- an hour of typing (first key after 1 s, typing time 3,600,000 ms, figures that add up) a second
  after the claim;
- one keystroke for the whole sentence (every character "typed");
- every figure zero but the typed characters;
- every character "prefilled" (in the field when the page opened).
Succeeds when the completion page shows the code.
"""

import random

from bench.attacks import _typing

NAME = "typing_impossible"
CLAIM = "Records no typing could leave (an hour in a second, one key, all zeros, all prefilled) pass."
IDS_PER_STUDY = 3


def _page(make):
    def evidence(texts: dict[str, str], rng: random.Random) -> str:
        return _typing.record({name: make(text, rng) for name, text in texts.items()}, open_ms=3_700_000)

    return evidence


def an_hour(text: str, rng: random.Random) -> dict:
    found = _typing.human_looking(text, rng)
    found.update({"fk": 1000, "tt": 3_600_000, "m": round(3_600_000 / found["n"], 1)})
    return found


def one_key(text: str, rng: random.Random) -> dict:
    return {"k": 1, "d": 0, "t": len(text), "fk": 900, "tt": 0, "n": 0, "len": len(text)}


def zeros(text: str, rng: random.Random) -> dict:
    return {"k": 0, "d": 0, "t": len(text), "fk": 0, "tt": 0, "n": 0, "m": 0, "cv": 0, "len": len(text)}


def prefilled(text: str, rng: random.Random) -> dict:
    return {"k": 0, "d": 0, "pre": len(text), "tt": 0, "n": 0, "len": len(text)}


VARIANTS = {
    "an-hour-in-a-second": _page(an_hour),
    "one-keystroke": _page(one_key),
    "all-zeros": _page(zeros),
    "all-prefilled": _page(prefilled),
}


def run(base_url: str, *, seed: int = 0) -> dict:
    return _typing.run_attack(NAME, base_url, seed, VARIANTS, IDS_PER_STUDY)
