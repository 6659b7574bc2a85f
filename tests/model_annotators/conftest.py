"""Fixtures of the model annotators' tests: the OpenAI-compatible STAND-IN server
(bench/openai_stand_in.py, a real local HTTP process that runs no model), and pairs with human gold."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from corpus.models import Label, Split
from tests import factories

REPO = Path(__file__).resolve().parents[2]
API_KEY = "standin-secret-key-57"


class StandInServer:
    def __init__(self, process: subprocess.Popen[str], url: str) -> None:
        self.process = process
        self.url = url  # .../v1

    def stats(self) -> dict:
        return requests.get(self.url.removesuffix("/v1") + "/stats", timeout=5).json()


@pytest.fixture(autouse=True)
def _labelling_inline(settings, monkeypatch):
    """A labelling job runs in the test's process, whatever the broker: these tests are about what
    the job does (tests/test_long_tasks.py covers how a worker takes and restarts long tasks)."""
    from annotation_site.celery import app

    # app.conf first: Celery reads Django's settings when its conf is first read.
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"


LOOPBACK = ["127.0.0.0/8", "::1/128"]


@pytest.fixture(autouse=True)
def _loopback_allowed(settings):
    """The stand-in listens on loopback, which the platform refuses to reach unless the deployment
    allow-lists it (base/outbound.py): these tests allow-list it, as a lab allow-lists its GPU node.
    The tests of the refusal (test_outbound.py) set their own allow-list."""
    settings.OUTBOUND_ALLOWED_NETWORKS = LOOPBACK


@pytest.fixture
def stand_in(tmp_path):
    """Start the stand-in with `answers` ({hypothesis: canned answer}); stopped after the test."""
    started: list[StandInServer] = []

    def start(answers: dict | None = None) -> StandInServer:
        path = tmp_path / f"answers-{len(started)}.json"
        path.write_text(json.dumps(answers or {}))
        process = subprocess.Popen(
            [sys.executable, str(REPO / "bench" / "openai_stand_in.py"), "--answers", str(path), "--api-key", API_KEY],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert first.startswith("listening on "), first
        server = StandInServer(process, first.removeprefix("listening on "))
        started.append(server)
        return server

    yield start
    for server in started:
        server.process.terminate()
        server.process.wait(timeout=10)


def answer(label: str, reason: str = "Because the premise says so.") -> str:
    return json.dumps({"label": label, "reason": reason})


def gold_pairs(dataset, golds, *, split=Split.DEV, hypotheses=None):
    """One pair per gold label, five human labels each (the writer's and four validators', 4 of 5 agreeing)."""
    genre = factories.genre("fiction")
    made = []
    others = {
        Label.ENTAILMENT: Label.NEUTRAL,
        Label.NEUTRAL: Label.CONTRADICTION,
        Label.CONTRADICTION: Label.ENTAILMENT,
    }
    for index, gold in enumerate(golds):
        premise = factories.premise(dataset, genre, split)
        hypothesis = hypotheses[index] if hypotheses else None
        made.append(factories.pair(dataset, premise, [gold, gold, others[gold], gold, gold], hypothesis=hypothesis))
    return made
