"""A writer's sentences are kept in the browser until the server has saved them: a reload or the
back button gives them back; after the save the browser's copy is gone."""

import re

import pytest

from crowd.models import Study, TaskKind
from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_typed_sentences_survive_a_reload_and_are_dropped_once_saved(page, live_server):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    study = Study.objects.create(
        slug="drafts",
        name="Write",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        tasks_per_batch=2,
        completion_code="W-1",
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=9a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=drafts-writing-1"
    )
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    first_task = page.url
    page.fill("#id_entailment", "A boat departed early in the morning.")
    page.fill("#id_neutral", "The boat carried tourists to an island.")
    page.reload()
    assert page.input_value("#id_entailment") == "A boat departed early in the morning."
    assert page.input_value("#id_neutral") == "The boat carried tourists to an island."
    assert page.locator("[data-draft-note]").is_visible()
    assert "UTC" not in page.inner_text("#expiry time")  # the worker's own clock

    page.fill("#id_contradiction", "The boat never left the harbour.")
    page.click("#submit-hypotheses")
    page.wait_for_url(lambda url: url != first_task and "/write/" in url)
    assert page.evaluate("Object.keys(localStorage).filter(k => k.startsWith('nli-draft:'))") == []
    assert page.input_value("#id_entailment") == ""


def test_a_reload_after_a_refused_submit_keeps_what_was_typed_since(page, live_server):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    study = Study.objects.create(
        slug="refused-reload", name="Write", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="W-2"
    )
    page.goto(
        f"{live_server.url}/study/{study.slug}/?PROLIFIC_PID=8a1b2c3d4e5f6a7b8c9d0e1f"
        "&STUDY_ID=61aa11bb22cc33dd44ee55ff&SESSION_ID=refused-reload-1"
    )
    page.wait_for_url(re.compile(r"/write/[0-9a-f-]+/$"))
    task = page.url
    page.fill("#id_entailment", "A boat departed early in the morning.")
    page.fill("#id_neutral", "A boat departed early in the morning.")  # a copy: refused
    page.fill("#id_contradiction", "The boat never left the harbour.")
    page.click("#submit-hypotheses")
    page.wait_for_selector("#neutral-errors")
    assert page.url == task  # shown by a GET: a reload asks nothing and posts nothing
    page.fill("#id_neutral", "The boat carried tourists to an island.")
    page.reload()
    assert page.input_value("#id_neutral") == "The boat carried tourists to an island."
    assert page.input_value("#id_contradiction") == "The boat never left the harbour."
