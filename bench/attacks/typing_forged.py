"""Forged human-looking typing evidence: a plain HTTP writer posts canned
sentences with a record a person's typing would leave, and submits at once.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only typing_forged

The record (bench/attacks/_typing.py, `human_looking`): keystrokes about the sentence's length, a few
deletions, intervals of 240 +- 60 ms whose count, mean, spread and typing time add up, a first key
after 2.5-6 s, the page open for 45 s: about 34 s of typing for a page the server handed out a
second earlier. Six ids in a study that holds codes and six in one that refuses pasted text, three
tasks each. Succeeds when the completion page shows the code.
"""

import random

from bench.attacks import _typing

NAME = "typing_forged"
CLAIM = "A bot posting canned sentences with human-looking typing records, at once, earns codes unflagged."
IDS_PER_STUDY = 6


def forged(texts: dict[str, str], rng: random.Random) -> str:
    return _typing.record({name: _typing.human_looking(text, rng) for name, text in texts.items()}, open_ms=45_000)


def run(base_url: str, *, seed: int = 0) -> dict:
    return _typing.run_attack(NAME, base_url, seed, {"human-looking": forged}, IDS_PER_STUDY)
