"""A forged typing record that fits the server's clock field by field: a plain HTTP
writer takes a task, waits the page's characters x 60 ms (a quarter of the mean human pace, the old
floor), and posts template sentences with a self-consistent record per field whose first key and
typing each fit the wait, so that the three fields together claim two to three times the seconds
the page was open.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 \\
        --only typing_paced_forgery

Three ids in a study that holds codes and three in one that refuses pasted text, three tasks each
(bench/attacks/_typing.py). Succeeds when the completion page shows the code. `run(...,
pace_ms=110, fit_the_page=True)` is the residue the clock cannot close: a forger that waits past the
human floor (105 ms a character) and splits the wait between the fields.
"""

import random
import time

from bench.attacks import _typing

NAME = "typing_paced_forgery"
CLAIM = (
    "A bot that waits page characters x 60 ms and sends per-field records that each fit the wait "
    "earns codes unflagged (its fields claim the same seconds)."
)
IDS_PER_STUDY = 3
FIRST_KEY_MS = 400


def paced_record(pace_ms: float, fit_the_page: bool):
    """The record for one page, sent `pace_ms` per page character after the claim."""

    def evidence(texts: dict[str, str], rng: random.Random) -> str:
        page_chars = sum(map(len, texts.values()))
        wait_ms = page_chars * pace_ms
        time.sleep(wait_ms / 1000)
        fields = {}
        for name, text in texts.items():
            intervals = len(text) - 1
            # Each field's typing fits the wait on its own (or, fitted to the page, its share of it).
            budget = wait_ms * (len(text) / page_chars if fit_the_page else 0.9) - FIRST_KEY_MS
            mean = round(min(240.0, budget / intervals), 1)
            fields[name] = {
                "k": len(text),
                "d": 0,
                "t": len(text),
                "fk": FIRST_KEY_MS,
                "tt": round(mean * intervals),
                "n": intervals,
                "m": mean,
                "cv": round(rng.uniform(0.45, 0.6), 3),
                "sk": round(rng.uniform(1.2, 2.0), 3),  # a person's long tail, claimed
                "len": len(text),
            }
        return _typing.record(fields, open_ms=round(wait_ms))

    return evidence


def run(base_url: str, *, seed: int = 0, pace_ms: float = 60.0, fit_the_page: bool = False) -> dict:
    # The variant's name goes into participant ids: no spaces.
    variant = f"{pace_ms:.0f}ms-a-char-{'fitted-to-the-page' if fit_the_page else 'each-field-fits'}"
    return _typing.run_attack(NAME, base_url, seed, {variant: paced_record(pace_ms, fit_the_page)}, IDS_PER_STUDY)
