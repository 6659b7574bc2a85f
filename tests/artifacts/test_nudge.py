"""Artifact-aware writing: the scoring endpoint, the record of what the note did, the study
switch, the dashboard's comparison, and the nudge in a real browser."""

import json

import pytest
from django.urls import reverse

from artifacts.models import NudgeRecord, StudyNudge
from artifacts.monitoring import nudge_effect, refresh_monitor
from base.permissions import ensure_researcher_group
from corpus.models import Pair
from corpus.scope import Scope
from teams.services import join
from tests.artifacts.test_monitor import planted_corpus
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.conftest import wait_for
from tests.present import present

GUESSABLE = "The man does not walk outside."


def post_json(client, url, body):
    """A draft scored as the writing page sends it: with the token of the writer's live claim."""
    if "claim" not in body:
        body = {**body, "claim": hold_writing_claim(client)}
    return client.post(url, json.dumps(body), content_type="application/json")


def hold_writing_claim(client):
    """The token of the logged-in worker's open writing claim (one is made where they hold none)."""
    from datetime import timedelta

    from django.utils import timezone

    from collection.models import WritingClaim
    from corpus.models import Premise, Worker

    worker = Worker.objects.filter(user_id=client.session.get("_auth_user_id")).first()
    if worker is None:
        return ""
    claim = WritingClaim.objects.filter(worker=worker, status="open").first()
    if claim is None:
        claim = WritingClaim.objects.create(
            worker=worker, premise=present(Premise.objects.first()), expires_at=timezone.now() + timedelta(minutes=30)
        )
    return str(claim.token)


@pytest.fixture
def monitored(db, make_worker):
    ds, _planted = planted_corpus(make_worker)
    refresh_monitor(ds)
    return ds


def test_scoring_needs_a_login_and_a_good_label(client, monitored, make_worker):
    url = reverse("artifacts:score")
    assert post_json(client, url, {"text": GUESSABLE, "label": "contradiction"}).status_code == 403
    assert client.get(url).status_code == 405
    client.force_login(make_worker(username="writer").user)
    bad = post_json(client, url, {"text": GUESSABLE, "label": "maybe"})
    assert bad.status_code == 400 and "label must be one of" in bad.json()["error"]
    assert client.post(url, "not json", content_type="application/json").status_code == 400
    assert client.post(reverse("artifacts:record_nudges")).status_code == 200  # nothing to record is fine
    client.logout()
    assert client.post(reverse("artifacts:record_nudges"), {"records": "[]"}).status_code == 403


def test_a_guessable_draft_names_its_words_and_a_plain_one_does_not(client, monitored, make_worker):
    client.force_login(make_worker(username="writer").user)
    url = reverse("artifacts:score")
    answer = post_json(client, url, {"text": GUESSABLE, "label": "contradiction", "dataset": "collected"}).json()
    assert answer["guessable"] and answer["words"][0] == "not" and "p" not in answer
    plain = post_json(
        client, url, {"text": "The dog runs at home.", "label": "contradiction", "dataset": "collected"}
    ).json()
    assert not plain["guessable"] and plain["words"] == []
    # Guessable as a contradiction: no note when writing for another label.
    other = post_json(client, url, {"text": GUESSABLE, "label": "entailment", "dataset": "collected"}).json()
    assert not other["guessable"]


def test_a_study_switches_the_nudge(client, monitored, make_worker, settings):
    study = make_study(monitored, slug="nudged")
    client.get(f"/study/{study.slug}/?PROLIFIC_PID=pid-1&STUDY_ID=s&SESSION_ID=x")
    url = reverse("artifacts:score")
    body = {"text": GUESSABLE, "label": "contradiction"}
    assert post_json(client, url, body).json() == {"enabled": False, "guessable": False}  # off by default
    StudyNudge.objects.create(study=study, enabled=True)
    assert post_json(client, url, body).json()["guessable"]
    nudge = StudyNudge.objects.get(study=study)
    nudge.threshold = 0.9999
    nudge.save()  # as the admin does: the cached nudge context goes stale at once
    assert not post_json(client, url, body).json()["guessable"]
    settings.ARTIFACTS_NUDGE_OUTSIDE_STUDIES = False
    client.logout()
    client.force_login(make_worker(username="local").user)
    assert not post_json(client, url, {**body, "dataset": "collected"}).json()["enabled"]


def test_scoring_queries_nothing_beyond_session_auth_and_follows_a_new_refresh(client, monitored, make_worker):
    """The hot path: after the first draft, only the session (none with a shared cache: it comes
    from there) and the user are read; the model is the one in memory, until a newer refresh
    replaces it."""
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(make_worker(username="writer").user)
    url = reverse("artifacts:score")
    body = {"text": GUESSABLE, "label": "contradiction", "dataset": "collected", "claim": hold_writing_claim(client)}
    first = post_json(client, url, body).json()
    with CaptureQueriesContext(connection) as queries:
        again = post_json(client, url, body).json()
    assert again == first and again["guessable"]
    tables = [q["sql"] for q in queries.captured_queries]
    read = ["auth_user"] if settings.SESSION_ENGINE.endswith("cached_db") else ["django_session", "auth_user"]
    assert len(tables) == len(read), tables
    assert all(f'FROM "{table}"' in sql for table, sql in zip(read, tables, strict=True))
    newer = refresh_monitor(monitored)
    assert post_json(client, url, body).json()["refresh"] == newer.pk


def test_records_and_the_nudged_versus_unnudged_figure(client, monitored, make_worker):
    writer = make_worker(username="writer")
    client.force_login(writer.user)
    records = [
        {"label": "contradiction", "text": "The man sleeps outside.", "shown": True, "revised": True, "words": ["not"]},
        {"label": "entailment", "text": "The man walks outside.", "shown": False, "revised": False},
        {"label": "maybe", "text": "skipped"},
    ]
    answer = client.post(reverse("artifacts:record_nudges"), {"records": json.dumps(records), "dataset": "collected"})
    assert answer.json() == {"recorded": 2}
    stored = NudgeRecord.objects.get(label="contradiction")
    assert stored.shown and stored.revised and stored.enabled and stored.worker == writer
    # Only hypotheses that became pairs count in the figure.
    effect = nudge_effect(Scope.of_dataset(monitored))
    assert effect["arms"]["shown"]["n"] == 0
    premise = present(Pair.objects.filter(dataset=monitored).first()).premise
    Pair.objects.create(
        dataset=monitored,
        premise=premise,
        pair_id="n1",
        hypothesis="The man sleeps outside.",
        author_label="contradiction",
        author=writer,
    )
    effect = nudge_effect(Scope.of_dataset(monitored))
    assert effect["arms"]["shown"]["n"] == 1 and effect["arms"]["shown"]["revised"] == 1
    assert 0 <= effect["arms"]["shown"]["mean_p"] <= 1
    client.logout()
    researcher = make_worker(username="boss").user
    researcher.is_staff = True
    researcher.save()
    researcher.groups.add(ensure_researcher_group())  # staff alone is no researcher
    join(researcher)  # of the default team, whose dataset the page shows (teams.access)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:artifacts"), {"dataset": "collected"}).content.decode()
    assert 'id="table-nudge-effect"' in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_writing_page_names_the_giveaway_word_and_records_the_revision(page, live_server, make_worker):
    ds, genre = writing_setup(slug="nudge-collection")
    planted_corpus(make_worker, dataset=ds, genre=genre)
    add_premises(ds, genre, 1, split="dev", start=900)
    refresh_monitor(ds)
    study = make_study(ds, slug="nudge-study")
    StudyNudge.objects.create(study=study, enabled=True)
    page.goto(f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=nudge-pid&STUDY_ID=s&SESSION_ID=n1")
    family = genre.family
    contradiction = page.get_by_label(family.contradiction_prompt)
    contradiction.fill(GUESSABLE)
    note = page.locator(".artifact-note[data-label=contradiction]")
    note.wait_for(state="visible")
    assert "\u201cnot\u201d" in note.inner_text() and "You may still submit" in note.inner_text()
    page.get_by_label(family.entailment_prompt).fill("Someone is near the harbour at dawn.")
    assert (
        page.locator(".artifact-note[data-label=entailment]").count() == 0
        or not page.locator(".artifact-note[data-label=entailment]").is_visible()
    )
    contradiction.fill("The boat waits in a park.")
    note.wait_for(state="hidden")
    page.get_by_label(family.neutral_prompt).fill("The boat carried tourists to an island.")
    page.locator("#submit-hypotheses").click()
    page.locator("#completion-code").wait_for()
    record = wait_for(
        lambda: NudgeRecord.objects.filter(label="contradiction").first(), timeout=20, message="the nudge record"
    )
    assert record.shown and record.revised and record.hypothesis == "The boat waits in a park."
    assert record.study == study and record.shown_words[0] == "not"
    assert NudgeRecord.objects.get(label="neutral").shown is False
