"""Missing typing evidence: a writer whose submits carry no `typing_evidence`
field at all, as a bot (or a page without script) sends them.

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only typing_missing

Three ids in a study that holds codes and three in one that refuses pasted text
(bench/attacks/_typing.py), three tasks each, canned sentences submitted at once. Succeeds when the
completion page shows the code.
"""

import random

from bench.attacks import _typing

NAME = "typing_missing"
CLAIM = "Submits without any typing record are 'no evidence', no flag: codes in studies that hold or refuse."
IDS_PER_STUDY = 3


def no_record(texts: dict[str, str], rng: random.Random) -> None:
    return None


def run(base_url: str, *, seed: int = 0) -> dict:
    return _typing.run_attack(NAME, base_url, seed, {"no-record": no_record}, IDS_PER_STUDY)
