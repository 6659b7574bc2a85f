"""Copies across writers and sessions: a template farm, and one id over many visits.

Against a writing study that holds the codes of flagged sessions (`typing_evidence_action = hold`,
three tasks a visit, from bench/attacks/_typing.setup), every page sent with a typing record that
passes every typing check: the bot waits, after each task is handed out, as long as its sentences
take to type by the server's clock, and reports keys 100 ms apart with a person's spread. What is
left to catch it is that its sentences are copies:

- farm: ten participant ids draw their nine hypotheses from one shared list of 30 sentences (ten
  per label, each of five words or more, each id its own random nine);
- repeat: one id arrives three times with a new session id each time (as MTurk assignments come)
  and writes the same nine sentences each visit.

Success for the attacker is a completion code shown. A check for copies inside one session
alone lets through 10 of 10 farm codes and 3 of 3 repeat codes. Across sessions, every visit whose
third of hypotheses are copies of earlier ones is held; the first farm id, whose sentences are the first of
their kind, is counted too (it cannot be told from an honest writer when it submits).
"""

import random
import re
import time
from concurrent.futures import ThreadPoolExecutor

from bench.attacks._participant import Participant, wilson
from bench.attacks._typing import Study, record, setup

NAME = "copy_farm"
CLAIM = "ids writing from one template list, or one id repeating over sessions, get no code"
TASKS = 3
FARM_IDS = 10
REPEAT_VISITS = 3
KEY_MS = 100.0
# Waiting past what the typing-time checks need (60 ms a character; the record's own times).
WAIT_MARGIN_S = 1.5

TEMPLATES = {
    "entailment": [
        "A crowd is gathered in a square.",
        "A band is playing music outside.",
        "People are listening to a band.",
        "There are trees near the square.",
        "Some people are standing in a crowd.",
        "Music is being played by a band.",
        "A group of people is outdoors.",
        "The band is playing under the trees.",
        "Many people are in the square.",
        "The crowd is standing near some trees.",
    ],
    "neutral": [
        "The band is playing a famous rock song.",
        "The crowd is waiting for a speech.",
        "The band members are brothers from the city.",
        "It is a warm summer evening in town.",
        "The people in the crowd are tourists.",
        "The band is playing at a wedding party.",
        "The square is in the middle of Paris.",
        "The crowd has been there for hours.",
        "The musicians are paid by the city council.",
        "A famous singer is about to arrive.",
    ],
    "contradiction": [
        "The square is completely empty tonight.",
        "The band is sleeping in the hotel.",
        "Nobody is listening to the music at all.",
        "A crowd is gathered inside a church.",
        "The musicians are playing in a stadium.",
        "There is no band in the square.",
        "The people are all asleep at home.",
        "The trees were cut down last year.",
        "The band refuses to play any music.",
        "The square is covered in deep snow.",
    ],
}
_TOKEN = re.compile(r"/write/([0-9a-f-]{36})/")


def typed_record(texts: dict[str, str], open_ms: int, rng: random.Random) -> str:
    """A record that adds up and fits inside the claim's lifetime, at a person's spread."""
    fields = {}
    for name, text in texts.items():
        intervals = len(text) + 1
        fields[name] = {
            "k": len(text) + 4,
            "d": 2,
            "t": len(text),
            "fk": rng.randint(200, 600),
            "n": intervals,
            "m": KEY_MS,
            "cv": round(rng.uniform(0.35, 0.6), 3),
            "tt": round(intervals * KEY_MS),
            "len": len(text),
        }
    return record(fields, open_ms=open_ms)


def pages_of(rng: random.Random) -> list[dict[str, str]]:
    """Nine sentences of the shared list, three pages of one per label."""
    drawn = {label: rng.sample(sentences, TASKS) for label, sentences in TEMPLATES.items()}
    return [{label: drawn[label][n] for label in TEMPLATES} for n in range(TASKS)]


def visit(participant: Participant, study: Study, session_id: str, pages: list[dict[str, str]], seed: int) -> bool:
    """One visit writing `pages` (in the participant's own browser); whether the code was shown."""
    rng = random.Random(seed)
    participant.arrive(study.slug, session_id=session_id)
    for texts in pages:
        page = participant.get("/write/next/")
        served = time.monotonic()
        match = _TOKEN.search(page.url)
        if not match:
            break
        chars = sum(map(len, texts.values()))
        time.sleep(max(chars * 0.06, max(len(text) for text in texts.values()) * KEY_MS / 1000) + WAIT_MARGIN_S)
        open_ms = int((time.monotonic() - served) * 1000)
        participant.post(f"/write/{match.group(1)}/", {**texts, "typing_evidence": typed_record(texts, open_ms, rng)})
    return study.code in participant.get("/write/next/").text


def run(base_url: str, *, seed: int = 0) -> dict:
    study = setup(NAME, seed, premises=(FARM_IDS + REPEAT_VISITS) * TASKS + 10)[0]  # sets Django up
    from authorship.models import WritingEvidence
    from crowd.models import StudySession

    rng = random.Random(seed)
    stamp = time.time_ns() % 10**6
    farm = [(Participant(base_url, f"farm{seed}x{n}x{stamp}"), pages_of(rng)) for n in range(FARM_IDS)]

    def farm_visit(n: int) -> bool:
        participant, pages = farm[n]
        return visit(participant, study, participant.pid, pages, seed + n)

    # The first id writes alone, so that every later one finds its sentences there (the order a farm
    # that starts its ids at once gets too, but for a few that race the first).
    first = farm_visit(0)
    with ThreadPoolExecutor(max_workers=5) as pool:
        farm_codes = [first, *pool.map(farm_visit, range(1, FARM_IDS))]
    # One browser, one id, a new session id each time.
    repeater = Participant(base_url, f"again{seed}x{stamp}")
    same_nine = pages_of(rng)
    repeat_codes = [
        visit(repeater, study, f"{repeater.pid}-assignment-{n}", same_nine, seed + 100 + n)
        for n in range(REPEAT_VISITS)
    ]
    sessions = StudySession.objects.filter(study__slug=study.slug)
    rows = WritingEvidence.objects.filter(study_session__in=sessions)
    flags: dict[str, int] = {}
    for found in rows.values_list("flags", flat=True):
        for flag in found:
            flags[flag] = flags.get(flag, 0) + 1
    codes = sum(farm_codes) + sum(repeat_codes)
    tries = len(farm_codes) + len(repeat_codes)
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": codes,
        "measure": "share of copying visits that earned a code",
        "value": round(codes / tries, 4),
        "interval": wilson(codes, tries),
        "at_chance_or_refused": codes <= 1,  # the farm's first id is the original, not yet a copy
        "detail": f"farm: {sum(farm_codes)} of {len(farm_codes)} ids got a code (first id: {'code' if first else 'held'}); "
        f"repeat: {sum(repeat_codes)} of {len(repeat_codes)} visits of one id got a code; "
        f"{rows.filter(flagged=True).count()} of {rows.count()} hypotheses flagged, flags {flags or '-'}",
    }
