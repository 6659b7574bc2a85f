"""A preview's background requests do not overwrite its submit's session (crowd.preview).

A writing page sends requests of its own while the worker writes (each draft's score). In a preview
every request opens the page's claims first, so those requests wait for a submit that holds them,
having loaded the browser's session before the submit saved its refusal there; a session is saved
whole, so one that saved its old copy afterwards erased the refusal, and the page after a refused
submit came back with no error (seen in tests/crowd/test_browser_preview.py on a slow first parse).
"""

import json
import re
from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.sessions.middleware import SessionMiddleware
from django.test import RequestFactory
from django.urls import reverse

from annotation_site.wiring import CLAIM_MODELS
from artifacts.views import score_draft
from crowd.models import StudySession
from crowd.preview import serve_preview
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = pytest.mark.django_db

SAME = "A boat departed early in the morning."


def test_a_draft_score_served_across_a_refused_submit_keeps_the_refusal(client, make_researcher):
    writing, genre = writing_setup(slug="preview-session")
    add_premises(writing, genre, 1, split="dev")
    make_study(writing, slug="preview-session")
    researcher = make_researcher("previewer")
    client.force_login(researcher)
    task_url = client.get(client.post(reverse("study_preview_start", args=["preview-session"]))["Location"])["Location"]
    assert re.fullmatch(r"/write/[0-9a-f-]+/", task_url), task_url
    token = task_url.strip("/").rsplit("/", 1)[-1]
    assert "nothing you do here is saved" in client.get(task_url).content.decode()

    # The score request arrives first: its session is loaded as the task page left it.
    score = RequestFactory().post(
        reverse("artifacts:score"),
        json.dumps({"text": SAME, "label": "neutral", "dataset": writing.slug, "claim": token}),
        content_type="application/json",
    )
    score.user = researcher
    # The session engine the settings name (the database's, or the cache's in front of it in CI).
    score.session = import_module(settings.SESSION_ENGINE).SessionStore(client.session.session_key)
    assert dict(score.session.items())  # loaded now, as the middleware's first read loads it

    # The submit is served meanwhile: two sentences the same, refused; the refusal is in the session.
    refused = client.post(
        task_url, {"entailment": SAME, "neutral": SAME.lower(), "contradiction": "The boat never left the harbour."}
    )
    assert refused.status_code == 302 and refused["Location"] == task_url

    # Then the score request finishes and its session is saved, as SessionMiddleware saves it.
    preview = StudySession.objects.get(is_preview=True)
    response = serve_preview(score, score_draft, preview, claim_models=CLAIM_MODELS)
    SessionMiddleware(lambda request: response).process_response(score, response)

    page = client.get(task_url).content.decode()
    assert "same as your &#x27;definitely correct&#x27; sentence" in page
