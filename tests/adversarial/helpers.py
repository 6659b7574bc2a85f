"""An adversarial study for the tests: a dataset of premises, a study, its settings, round 1 on a
target, and a small HTTP model that follows the documented JSON contract (a real server, so the
endpoint path is tested as a researcher's own model would be served)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.test import override_settings

from adversarial.models import AdversarialStudy, Round
from corpus.models import Split
from crowd import arrival
from crowd.models import Study, StudySession, TaskKind
from tests import factories


def cue_probabilities(hypothesis):
    """The scripted model: 'not' -> contradiction, 'maybe' -> neutral, anything else -> entailment."""
    words = hypothesis.lower().split()
    if "not" in words:
        return {"entailment": 0.1, "neutral": 0.2, "contradiction": 0.7}
    if "maybe" in words:
        return {"entailment": 0.2, "neutral": 0.6, "contradiction": 0.2}
    return {"entailment": 0.8, "neutral": 0.1, "contradiction": 0.1}


class ContractModel:
    """A tiny model server: POST {"premise", "hypothesis"} -> {"probabilities": {...}}; counts its requests."""

    def __init__(self):
        owner = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                owner.requests += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                answer = json.dumps({"probabilities": cue_probabilities(body["hypothesis"])}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        # The platform reaches a loopback address only where the deployment allow-lists it
        # (base.outbound), as a lab allow-lists its own model server.
        self.allowed = override_settings(OUTBOUND_ALLOWED_NETWORKS=["127.0.0.0/8", "::1/128"])
        self.allowed.enable()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/predict"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.allowed.disable()


def adversarial_study(slug="adv", target_endpoint="", target_run=None, premises=4, split=Split.DEV, **settings):
    dataset = factories.dataset(f"{slug}-r1", name=f"{slug} round 1")
    for _ in range(premises):
        factories.premise(dataset, split=split)
    study = Study.objects.create(
        slug=slug,
        name=f"Adversarial {slug}",
        dataset=dataset,
        task_kind=TaskKind.ADVERSARIAL,
        tasks_per_batch=settings.pop("tasks_per_batch", 3),
        completion_code="ADV",
    )
    AdversarialStudy.objects.create(study=study, **settings)
    round_ = Round.objects.create(
        study=study, number=1, dataset=dataset, target_endpoint=target_endpoint, target_run=target_run
    )
    return study, round_


def arrive(client, worker, study):
    """Log the worker in with a session of the study, as the study link does."""
    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{worker.pk}")
    client.force_login(worker.user)
    browser_session = client.session
    browser_session[arrival.SESSION_KEY] = session.pk
    browser_session.save()
    return session


def hypothesis_for(label, fooled, n=0):
    """A hypothesis the scripted model labels `label` (not fooled) or something else (fooled)."""
    said = {
        "entailment": "a person is outside",
        "neutral": "maybe a person is outside",
        "contradiction": "a person is not outside",
    }
    if not fooled:
        return f"{said[label]} {'today ' * n}".strip()
    other = "contradiction" if label != "contradiction" else "entailment"
    return f"{said[other]} {'now ' * n}".strip()
