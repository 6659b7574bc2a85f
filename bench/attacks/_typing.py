"""What the typing-evidence attacks share: writing studies to attack, a writer who
speaks HTTP only and posts canned sentences with whatever typing record the attack forges, and the
judge's count of codes and flags.

The judge (Django against the server's DATABASE_URL) builds, per run, a dataset of premises and two
writing studies on it: one that holds the code of a session whose sentences were not typed
(`typing_evidence_action = hold`) and one that refuses pasted text (`refuse`), three tasks a visit.
Each participant id arrives by the study link, takes `/write/next/`, and posts three canned
hypotheses (drawn from templates so no two are near-copies: the `repeated` flag is not what is
tested) with the record `evidence(texts, rng)` gives (None: no `typing_evidence` field at all), at
once, as a bot does. A refused submit is tried once more, then the visit is given up. After the
visit the judge reads whether the completion page shows the code and how many of the id's
hypotheses the server flagged.
"""

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.attacks._participant import Participant, django_ready, wilson

SUBJECTS = ["The man", "A woman", "The child", "An old dog", "The driver", "A tall girl", "The cook", "Two boys"]
VERBS = ["is sleeping", "sings loudly", "reads a letter", "waits outside", "eats lunch", "walks home", "paints a wall"]
PLACES = ["at the station", "in the kitchen", "near the river", "on the hill", "behind the shop", "in a boat"]
TASKS = 3
# The record a forging attack writes for one page's texts (field name -> text), or None for none.
Evidence = Callable[[dict[str, str], random.Random], str | None]


def canned(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(PLACES)}."


def record(fields: dict[str, dict], *, open_ms: int) -> str:
    return json.dumps({"v": 1, "open": open_ms, "away": 0, "awayMs": 0, "fields": fields})


def human_looking(text: str, rng: random.Random) -> dict:
    """The issue's forged record: keystrokes about the length, 240 +- 60 ms intervals, a few
    deletions, figures that add up (about 34 s of typing for a page of three)."""
    deletions = rng.randint(1, 3)
    keys = len(text) + 2 * deletions
    intervals = [max(80.0, rng.gauss(240, 60)) for _ in range(keys - 1)]
    mean = sum(intervals) / len(intervals)
    spread = (sum((gap - mean) ** 2 for gap in intervals) / (len(intervals) - 1)) ** 0.5
    return {
        "k": keys,
        "d": deletions,
        "t": len(text),
        "fk": rng.randint(2500, 6000),
        "tt": round(mean * len(intervals)),
        "n": len(intervals),
        "m": round(mean, 1),
        "cv": round(spread / mean, 3),
        "len": len(text),
    }


@dataclass
class Study:
    slug: str
    code: str
    action: str


def setup(tag: str, seed: int, premises: int) -> list[Study]:
    """A dataset of `premises` premises and its two writing studies (hold, refuse)."""
    django_ready()
    from corpus.models import Dataset, Genre, Premise, PromptFamily, Split
    from crowd.models import Study as StudyRow
    from crowd.models import TaskKind, TypingEvidenceAction

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
    dataset = Dataset.objects.create(slug=f"atk-{tag}-{nonce}", name=f"attack {tag}")
    Premise.objects.bulk_create(
        Premise(
            dataset=dataset,
            genre=genre,
            prompt_id=f"{nonce}-{n}",
            split=Split.TRAIN,
            text=f"A crowd gathers in the square number {n} while a band plays under the trees.",
        )
        for n in range(premises)
    )
    studies = []
    for action in (TypingEvidenceAction.HOLD_CODE, TypingEvidenceAction.REFUSE_PASTE):
        slug = f"atk-{tag}-{action}-{nonce}"
        code = f"T{action.upper()}{nonce.replace('-', '')}"[:20]
        StudyRow.objects.create(
            slug=slug,
            name=slug,
            dataset=dataset,
            task_kind=TaskKind.WRITING,
            tasks_per_batch=TASKS,
            completion_code=code,
            typing_evidence_action=action,
        )
        studies.append(Study(slug, code, str(action)))
    return studies


@dataclass
class Visit:
    code: bool  # the completion page showed the code
    written: int  # hypotheses the server saved
    flagged: int  # of those, flagged
    refused: int  # submits refused
    flags: dict[str, int]


_TOKEN = re.compile(r"/write/([0-9a-f-]{36})/")


def write_visit(base_url: str, study: Study, pid: str, evidence: Evidence, rng: random.Random) -> Visit:
    from authorship.models import WritingEvidence
    from crowd.models import StudySession

    participant = Participant(base_url, pid)
    participant.arrive(study.slug)
    refused = 0
    for _ in range(TASKS):
        page = participant.get("/write/next/")
        match = _TOKEN.search(page.url)
        if not match:
            break
        texts = {"entailment": canned(rng), "neutral": canned(rng), "contradiction": canned(rng)}
        data = dict(texts)
        forged = evidence(texts, rng)
        if forged is not None:
            data["typing_evidence"] = forged
        saved = False
        for _attempt in range(2):
            response = participant.post(f"/write/{match.group(1)}/", data)
            # Saved: redirected on to the next task or the end; refused: back to this task's page.
            if match.group(1) not in response.url:
                saved = True
                break
            refused += 1
        if not saved:
            break
    final = participant.get("/write/next/").text
    session = StudySession.objects.filter(study__slug=study.slug, external_session_id=pid).first()
    rows = list(WritingEvidence.objects.filter(study_session=session)) if session else []
    flags: dict[str, int] = {}
    for row in rows:
        for flag in row.flags:
            flags[flag] = flags.get(flag, 0) + 1
    return Visit(study.code in final, len(rows), sum(row.flagged for row in rows), refused, flags)


def run_attack(name: str, base_url: str, seed: int, variants: dict[str, Evidence], ids_per_study: int) -> dict:
    """Each variant's writers (`ids_per_study` per study) through both studies; one row."""
    studies = setup(name, seed, premises=len(variants) * ids_per_study * 2 * TASKS + 10)
    rng = random.Random(seed)
    visits: list[tuple[str, Study, Visit]] = []
    for variant, evidence in variants.items():
        for study in studies:
            for n in range(ids_per_study):
                pid = f"{name[:6]}{seed}{variant[:6]}{study.action}{n}{time.time_ns() % 10**6}"
                visits.append((variant, study, write_visit(base_url, study, pid, evidence, rng)))
    codes = sum(visit.code for _, _, visit in visits)
    written = sum(visit.written for _, _, visit in visits)
    flagged = sum(visit.flagged for _, _, visit in visits)
    per_variant = []
    for variant in variants:
        mine = [visit for v, _, visit in visits if v == variant]
        flags: dict[str, int] = {}
        for visit in mine:
            for flag, count in visit.flags.items():
                flags[flag] = flags.get(flag, 0) + count
        per_variant.append(
            f"{variant}: {sum(v.code for v in mine)} of {len(mine)} codes, "
            f"{sum(v.flagged for v in mine)} of {sum(v.written for v in mine)} saved hypotheses flagged, "
            f"{sum(v.refused for v in mine)} submits refused, flags {flags or '-'}"
        )
    return {
        "attack": name,
        "tries": len(visits),
        "succeeded": codes,
        "measure": "share of writing visits that earned a code",
        "value": round(codes / len(visits), 4) if visits else 0.0,
        "interval": wilson(codes, len(visits)),
        "at_chance_or_refused": codes == 0,
        "detail": f"{codes} of {len(visits)} codes; {flagged} of {written} saved hypotheses flagged. "
        + "; ".join(per_variant),
    }
