"""Copies that survive paraphrase: a template farm that changes one word of each
sentence, and a farm of sentences of at most four words.

Against a writing study that holds the codes of flagged sessions (`typing_evidence_action = hold`,
three tasks a visit) on premises of SNLI dev's captions (../shared/data/snli_1.0_dev.jsonl, one
caption a premise, in file order), every page is sent with a typing record that passes the typing
checks: the bot waits, after each task is handed out, as long as the page's three sentences take to
type one after the other at KEY_MS a key, and claims exactly that. What is left to catch it is that
its sentences are copies:

- paraphrase: ten ids draw their nine hypotheses from copy_farm's shared list of 30 sentences, each
  id changing one content word of each sentence (a random word for a random one of the list's);
- short: ten ids draw their nine from one shared list of 30 sentences of at most four words.

Success for the attacker is a completion code shown. Before, the trigram rule put one changed word
at 0.49-0.74 (under 0.85) and never looked at sentences under five words. The first id of each farm
is the original of its sentences (nothing was written before it); a later id may draw few of the
sentences earlier ids wrote, so each farm's residue is counted, not assumed away.
"""

import json
import os
import random
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.attacks._participant import Participant, django_ready, wilson
from bench.attacks._typing import record
from bench.attacks.copy_farm import TEMPLATES

NAME = "paraphrase_farm"
CLAIM = "ids writing one template list with a word changed, or one list of short sentences, get no code"
TASKS = 3
FARM_IDS = 10
# A person's mean inter-key interval (Dhakal et al. 2018, docs/quality.md); the bot claims it and
# waits it out, so no typing check has anything to say.
KEY_MS = 240.0
WAIT_MARGIN_S = 1.5
DATA = Path(os.environ.get("NLI_SHARED_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))

SHORT = [
    "Musicians perform music.",
    "Tourists enjoy concerts.",
    "Everyone stays asleep.",
    "People dance happily.",
    "Someone sells tickets.",
    "Children eat ice cream.",
    "Friends celebrate together.",
    "A singer rehearses.",
    "Nobody buys anything.",
    "The stadium is empty.",
    "Dancers wear costumes.",
    "Fans cheer loudly.",
    "The weather is stormy.",
    "Drivers honk horns.",
    "Students study quietly.",
    "Grandparents knit sweaters.",
    "Soldiers march proudly.",
    "Chefs cook dinner.",
    "Pilots fly planes.",
    "Farmers harvest wheat.",
    "Doctors treat patients.",
    "Nurses check charts.",
    "Actors rehearse lines.",
    "Painters mix colours.",
    "Writers edit drafts.",
    "Bakers knead dough.",
    "Gardeners plant tulips.",
    "Firefighters extinguish flames.",
    "Swimmers race laps.",
    "Climbers scale cliffs.",
]
REPLACEMENTS = ["audience", "group", "plaza", "park", "song", "tune", "folks", "city", "evening", "loud", "many"]
FUNCTION_WORDS = {"a", "an", "the", "is", "are", "in", "on", "at", "to", "by", "of", "there", "some", "been", "being"}
_TOKEN = re.compile(r"/write/([0-9a-f-]{36})/")


def one_word_changed(text: str, rng: random.Random) -> str:
    words = text.rstrip(".").split()
    spot = rng.choice([n for n, word in enumerate(words) if word.lower() not in FUNCTION_WORDS])
    words[spot] = rng.choice([word for word in REPLACEMENTS if word != words[spot].lower()])
    return " ".join(words) + "."


def paraphrase_pages(rng: random.Random) -> list[dict[str, str]]:
    drawn = {label: rng.sample(sentences, TASKS) for label, sentences in TEMPLATES.items()}
    return [{label: one_word_changed(drawn[label][n], rng) for label in TEMPLATES} for n in range(TASKS)]


def short_pages(rng: random.Random) -> list[dict[str, str]]:
    drawn = rng.sample(SHORT, 3 * TASKS)
    return [dict(zip(TEMPLATES, drawn[3 * n : 3 * n + 3], strict=True)) for n in range(TASKS)]


def typed_record(texts: dict[str, str], open_ms: int, rng: random.Random) -> str:
    """Fields typed one after another, at KEY_MS with a person's spread, inside the page's time."""
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


def captions(count: int) -> list[str]:
    """SNLI dev's first `count` distinct captions, or made-up scenes where the file is not here."""
    found: list[str] = []
    path = DATA / "snli_1.0_dev.jsonl"
    if path.exists():
        for line in path.open():
            caption = json.loads(line)["sentence1"]
            if caption not in found:
                found.append(caption)
            if len(found) == count:
                return found
    scenes = ["A boat leaves the harbour", "A dog runs on the beach", "Two men repair a roof", "A girl reads"]
    return found + [f"{scenes[n % len(scenes)]} (scene {n})." for n in range(count - len(found))]


def setup(seed: int) -> tuple[str, str]:
    """A dataset of SNLI dev captions and a writing study that holds flagged sessions' codes."""
    django_ready()
    from corpus.models import Dataset, Genre, Premise, PromptFamily, Split
    from crowd.models import Study, TaskKind, TypingEvidenceAction

    nonce = f"{seed}-{time.time_ns() % 10**9}"
    family, _ = PromptFamily.objects.get_or_create(
        slug="attack-family",
        defaults={
            "name": "Attack family",
            "instructions": "Write.",
            "entailment_prompt": "Definitely correct",
            "neutral_prompt": "Might be correct",
            "contradiction_prompt": "Definitely incorrect",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug="attack-genre", defaults={"name": "Attack", "family": family, "is_training": True}
    )
    dataset = Dataset.objects.create(slug=f"atk-{NAME}-{nonce}", name=f"attack {NAME}")
    Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, prompt_id=f"{nonce}-{n}", split=Split.TRAIN, text=text)
        for n, text in enumerate(captions(2 * FARM_IDS * TASKS + 10))
    )
    slug = f"atk-{NAME}-{nonce}"
    code = f"P{nonce.replace('-', '')}"[:20]
    Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        tasks_per_batch=TASKS,
        completion_code=code,
        typing_evidence_action=TypingEvidenceAction.HOLD_CODE,
    )
    return slug, code


def visit(participant: Participant, slug: str, code: str, pages: list[dict[str, str]], seed: int) -> bool:
    """One visit writing `pages`; whether the code was shown."""
    rng = random.Random(seed)
    participant.arrive(slug)
    for texts in pages:
        page = participant.get("/write/next/")
        served = time.monotonic()
        match = _TOKEN.search(page.url)
        if not match:
            break
        time.sleep(sum(len(text) + 1 for text in texts.values()) * KEY_MS / 1000 + WAIT_MARGIN_S)
        open_ms = int((time.monotonic() - served) * 1000)
        participant.post(f"/write/{match.group(1)}/", {**texts, "typing_evidence": typed_record(texts, open_ms, rng)})
    return code in participant.get("/write/next/").text


def run(base_url: str, *, seed: int = 0) -> dict:
    slug, code = setup(seed)
    from authorship.models import WritingEvidence
    from crowd.models import StudySession

    rng = random.Random(seed)
    stamp = time.time_ns() % 10**6
    farms = {
        kind: [(Participant(base_url, f"{kind}{seed}x{n}x{stamp}"), pages(rng)) for n in range(FARM_IDS)]
        for kind, pages in (("paraphrase", paraphrase_pages), ("short", short_pages))
    }
    codes: dict[str, list[bool]] = {}
    for kind, farm in farms.items():
        # The first id writes alone, so that every later one finds its sentences there.
        first = visit(farm[0][0], slug, code, farm[0][1], seed)
        with ThreadPoolExecutor(max_workers=FARM_IDS - 1) as pool:
            later = list(
                pool.map(
                    lambda member, n: visit(member[0], slug, code, member[1], seed + n), farm[1:], range(1, FARM_IDS)
                )
            )
        codes[kind] = [first, *later]
    detail = []
    for kind, farm in farms.items():
        pids = [participant.pid for participant, _ in farm]
        rows = WritingEvidence.objects.filter(study_session__in=StudySession.objects.filter(study__slug=slug))
        rows = rows.filter(study_session__worker__external_id__in=pids)
        flags: dict[str, int] = {}
        for found in rows.values_list("flags", flat=True):
            for flag in found:
                flags[flag] = flags.get(flag, 0) + 1
        detail.append(
            f"{kind}: {sum(codes[kind])} of {FARM_IDS} ids got a code (first id: "
            f"{'code' if codes[kind][0] else 'held'}); {rows.filter(flagged=True).count()} of {rows.count()} "
            f"hypotheses flagged, flags {flags or '-'}"
        )
    paid = sum(sum(found) for found in codes.values())
    tries = sum(len(found) for found in codes.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": paid,
        "measure": "share of farm ids that earned a code",
        "value": round(paid / tries, 4),
        "interval": wilson(paid, tries),
        # Each farm's first id is the original of its sentences, not yet a copy.
        "at_chance_or_refused": paid <= len(farms),
        "detail": "; ".join(detail),
    }
