"""Grammatical nonsense on the adversarial task, verified by two colluders in fresh browsers: does
a sentence with no sense fool the target, pass the verifiers and become dev gold?

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only nonsense_verified_by_colluders

The judge (Django against the server's database) builds an adversarial writing study on dev
premises whose round 1 targets a scripted model served here that answers "entailment" for
anything (so every task whose target label is another is fooled by whatever reaches it), and a
validation study on the same dataset. One writer id sends, on each task, a grammatical sentence
with no sense ("The patient theorem negotiates a purple violin."; `nonsense`) and a one-line reason
when fooled. Then two colluder ids, each in a fresh browser (its own cookie jar, so its own device
cookie) on the writer's machine, take validation batches and give each of the writer's sentences
the writer's label. A try "becomes gold" when its verification is `verified` (the round's dev/test
data and the writer's bonus).

`nonsense_kinds` yields the two kinds of sentence the sense score is calibrated on
(bench/sense_score.py): words of no relation to the premise, and the premise's own words slotted
into the same templates.
"""

import html
import json
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.attacks._participant import Participant, django_ready, wilson

NAME = "nonsense_verified_by_colluders"
CLAIM = "Grammatical nonsense fools the target and, verified by two colluders in fresh browsers, becomes gold."
TASKS = 6
COLLUDERS = 2

ADJECTIVES = ["purple", "patient", "silent", "hollow", "generous", "frozen", "ancient", "curious", "brittle", "loud"]
NOUNS = [
    "theorem",
    "violin",
    "democracy",
    "vinegar",
    "calendar",
    "volcano",
    "syllable",
    "mortgage",
    "glacier",
    "opinion",
]
VERBS = ["negotiates", "digests", "forgives", "measures", "borrows", "whispers to", "invents", "repairs", "paints"]
ADVERBS = ["furiously", "politely", "backwards", "twice", "sideways", "reluctantly"]
TEMPLATES = [
    "The {adj} {noun} {verb} a {adj2} {noun2}.",
    "A {noun} {verb} the {adj} {noun2} {adv}.",
    "Every {adj} {noun} {verb} the {noun2}.",
    "The {noun} of the {noun2} {verb} a {adj} {noun3}.",
]
PREMISES = [
    "A man in a red shirt rides a bicycle down a busy street.",
    "Two children are playing with a ball in the park.",
    "A woman is cooking dinner in a small kitchen.",
    "A dog runs across a snowy field toward its owner.",
    "An old man sits on a bench reading a newspaper.",
    "A group of people are waiting for a bus in the rain.",
]
_CONTENT = re.compile(r"[A-Za-z]{4,}")


def nonsense(rng: random.Random, nouns: list[str] | None = None) -> str:
    """A grammatical sentence with no sense: a template filled with words of no relation to each
    other, its nouns from `nouns` when given (the premise's own words)."""
    pool = nouns or NOUNS
    return rng.choice(TEMPLATES).format(
        adj=rng.choice(ADJECTIVES),
        adj2=rng.choice(ADJECTIVES),
        noun=rng.choice(pool),
        noun2=rng.choice(pool),
        noun3=rng.choice(pool),
        verb=rng.choice(VERBS),
        adv=rng.choice(ADVERBS),
    )


def premise_words(premise: str) -> list[str]:
    return [word.lower() for word in _CONTENT.findall(premise)] or NOUNS


def nonsense_kinds(premise: str, rng: random.Random) -> dict[str, str]:
    """One sentence of each kind for this premise: "unrelated" words and the "premise words" slotted in."""
    return {"unrelated": nonsense(rng), "premise words": nonsense(rng, premise_words(premise))}


class _EntailingModel:
    """The target: "entailment" for every hypothesis (a real model is no better at nonsense)."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                body = json.dumps({"probabilities": {"entailment": 0.9, "neutral": 0.05, "contradiction": 0.05}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/predict"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _setup(nonce: str, endpoint: str) -> tuple[Any, Any]:
    from adversarial.models import AdversarialStudy, Round
    from corpus.models import Dataset, Genre, Premise, PromptFamily, Split
    from crowd.models import Study, TaskKind

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
    dataset = Dataset.objects.create(slug=f"atk-sense-{nonce}", name="attack nonsense")
    for n in range(2 * len(PREMISES)):
        Premise.objects.create(
            dataset=dataset, genre=genre, prompt_id=f"{nonce}-s{n}", split=Split.DEV, text=PREMISES[n % len(PREMISES)]
        )
    writing = Study.objects.create(
        slug=f"atk-sense-{nonce}",
        name="attack nonsense",
        dataset=dataset,
        task_kind=TaskKind.ADVERSARIAL,
        tasks_per_batch=TASKS,
        completion_code=f"SNS{nonce}",
    )
    AdversarialStudy.objects.create(study=writing, max_tries=2, tries_per_minute=60, bonus_per_verified_fooled="0.50")
    Round.objects.create(study=writing, number=1, dataset=dataset, target_endpoint=endpoint)
    validating = Study.objects.create(
        slug=f"atk-sense-v-{nonce}",
        name="attack nonsense verification",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=2,
        completion_code=f"SNV{nonce}",
    )
    return writing, validating


def _write(participant: Participant, rng: random.Random) -> tuple[int, int]:
    """The writer's visit: nonsense on each task; returns (tries sent, fooled)."""
    tries = fooled = 0
    for _ in range(TASKS):
        page = participant.get("/adversarial/next/")
        match = re.search(r"/adversarial/([0-9a-f-]{36})/", page.url)
        if not match:
            break
        token = match.group(1)
        for _ in range(2):
            sentence = nonsense(rng)
            response = participant.post(
                f"/adversarial/{token}/try/", {"hypothesis": sentence}, headers={"Accept": "application/json"}
            )
            tries += 1
            if response.status_code != 200:
                continue
            answer = response.json()
            if answer.get("model_fooled"):
                fooled += 1
                participant.post(f"/adversarial/{token}/reason/", {"reason": "It is what the line says."})
                break
            if answer.get("task_done"):
                break
    return tries, fooled


def _collude(participant: Participant, written: dict[str, str]) -> int:
    """A colluder's visit: every batch, the writer's label on the writer's sentences (neutral on
    any other pair); returns how many of the writer's sentences it labelled."""
    given = 0
    for _ in range(10):
        page = participant.get("/validate/next/")
        blocks = re.split(r'data-item="', page.text)[1:]
        if not blocks:
            break
        answers = {}
        for block in blocks:
            name = html.unescape(block.split('"', 1)[0])
            label = next((label for text, label in written.items() if text in block), None)
            answers[name] = label or "neutral"
            given += label is not None
        participant.post(page.url, answers)
    return given


def run(base_url: str, *, seed: int = 0) -> dict[str, Any]:
    django_ready()
    from adversarial.models import AdversarialTry, Verification, VerifierTie

    nonce = f"{seed}-{time.time_ns() % 10**9}"
    model = _EntailingModel()
    rng = random.Random(seed)
    try:
        writing, validating = _setup(nonce, model.url)
        writer = Participant(base_url, f"{nonce}-writer")
        writer.arrive(writing.slug)
        tries, fooled = _write(writer, rng)
        code = writing.completion_code in writer.get("/adversarial/next/").text
        # The target labels as the server stored them (the page's JSON names the prediction only).
        fooled_tries = AdversarialTry.objects.filter(round__study=writing, model_fooled=True).select_related("task")
        written = {html.escape(t.hypothesis): t.task.target_label for t in fooled_tries}
        labelled = 0
        for n in range(COLLUDERS):
            colluder = Participant(base_url, f"{nonce}-colluder-{n}")  # a fresh browser: its own device cookie
            colluder.arrive(validating.slug)
            labelled += _collude(colluder, written)
        verified = AdversarialTry.objects.filter(round__study=writing, verification=Verification.VERIFIED).count()
        pending = AdversarialTry.objects.filter(
            round__study=writing, model_fooled=True, verification=Verification.PENDING
        ).count()
        ties = VerifierTie.objects.filter(attempt__round__study=writing).count()
    finally:
        model.close()
    return {
        "attack": NAME,
        "tries": fooled,
        "succeeded": verified,
        "measure": "share of fooled nonsense tries verified (gold)",
        "value": round(verified / fooled, 4) if fooled else 0.0,
        "interval": wilson(verified, fooled),
        "at_chance_or_refused": verified == 0,
        "detail": (
            f"{tries} nonsense tries, {fooled} fooled the target; the colluders labelled them {labelled} times; "
            f"{verified} verified, "
            f"{pending} left pending with {ties} verifier ties recorded; the writer's code: {code}"
        ),
    }
