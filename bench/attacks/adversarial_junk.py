"""Keyboard mash on the adversarial writing task: does `xrcm qwbw xnqb` reach the model, fool it
and earn a completion code?

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only adversarial_junk

The judge (Django against the server's database) builds an adversarial writing study (20 dev
premises, three tasks a visit, three tries a task) with round 1 on an external endpoint: a scripted
model this attack serves on 127.0.0.1 (the documented JSON contract) that answers "entailment"
for anything, so every task whose target label is another one is fooled by whatever reaches it.
Four participant ids arrive by the study link and send, on each task, strings of random consonants
("xrcm qwbw xnqb": three or four words of four letters), then a one-line reason when fooled. A
try succeeds when the model is asked (the page answers with its label); codes are read from the
page after the visit's last task.
"""

import json
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from bench.attacks._participant import Participant, django_ready, wilson

NAME = "adversarial_junk"
CLAIM = "Random consonant strings pass the adversarial task's checks, fool the target and earn codes."
IDS = 4
CONSONANTS = "bcdfghjklmnpqrstvwxz"


class _EntailingModel:
    """The target: "entailment" for every hypothesis (a real model is no better at junk)."""

    def __init__(self) -> None:
        self.asked = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                owner.asked += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                body = json.dumps({"probabilities": {"entailment": 0.9, "neutral": 0.05, "contradiction": 0.05}})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/predict"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def junk(rng: random.Random) -> str:
    return " ".join("".join(rng.choice(CONSONANTS) for _ in range(4)) for _ in range(rng.choice((3, 4))))


def _setup(nonce: str, endpoint: str):
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
    dataset = Dataset.objects.create(slug=f"atk-adv-{nonce}", name="attack adversarial")
    for n in range(20):
        Premise.objects.create(
            dataset=dataset,
            genre=genre,
            prompt_id=f"{nonce}-a{n}",
            split=Split.DEV,
            text=f"A man rides bike number {n}.",
        )
    study = Study.objects.create(
        slug=f"atk-adv-{nonce}",
        name="attack adversarial",
        dataset=dataset,
        task_kind=TaskKind.ADVERSARIAL,
        tasks_per_batch=3,
        completion_code=f"ADV{nonce}",
    )
    AdversarialStudy.objects.create(study=study, max_tries=3, tries_per_minute=60, bonus_per_verified_fooled="0.50")
    Round.objects.create(study=study, number=1, dataset=dataset, target_endpoint=endpoint)
    return study


def run(base_url: str, *, seed: int = 0) -> dict:
    django_ready()
    nonce = f"{seed}-{time.time_ns() % 10**9}"
    model = _EntailingModel()
    rng = random.Random(seed)
    tries = reached = fooled = codes = 0
    try:
        study = _setup(nonce, model.url)
        for n in range(IDS):
            participant = Participant(base_url, f"{nonce}-writer-{n}")
            participant.arrive(study.slug)
            for _ in range(study.tasks_per_batch):
                page = participant.get("/adversarial/next/")
                match = re.search(r"/adversarial/([0-9a-f-]{36})/", page.url)
                if not match:
                    break
                token = match.group(1)
                for _ in range(3):
                    response = participant.post(
                        f"/adversarial/{token}/try/", {"hypothesis": junk(rng)}, headers={"Accept": "application/json"}
                    )
                    tries += 1
                    if response.status_code != 200:
                        continue  # refused: the model was not asked
                    reached += 1
                    answer = response.json()
                    if answer.get("model_fooled"):
                        fooled += 1
                        participant.post(f"/adversarial/{token}/reason/", {"reason": "qwrt zxcv"})
                        participant.post(f"/adversarial/{token}/reason/", {"reason": "It is what the line says."})
                        break
                    if answer.get("task_done"):
                        break
                else:
                    # Every try refused: a participant moves on only by finishing, so the visit ends here.
                    break
            codes += study.completion_code in participant.get("/adversarial/next/").text
    finally:
        model.close()
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": reached,
        "measure": "share of junk tries the model was asked",
        "value": round(reached / tries, 4) if tries else 0.0,
        "interval": wilson(reached, tries),
        "at_chance_or_refused": reached == 0 and codes == 0,
        "detail": (
            f"{reached} of {tries} junk tries reached the model (it was asked {model.asked} times), "
            f"{fooled} fooled it; {codes} of {IDS} ids earned a code"
        ),
    }
