"""A submit tells the next page which drafts the server saved (the browser then drops its copies),
through a cookie of its own: neither the submit nor the page after it writes the session."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from crowd.services import SAVED_DRAFTS_COOKIE, SAVED_DRAFTS_KEPT
from tests.present import present
from validation.models import ValidationClaim

from .validation_factories import item_field, make_pair

pytestmark = pytest.mark.django_db

NAMED = re.compile(r'data-saved-drafts="([^"]*)"')


def session_writes(queries):
    return [q["sql"] for q in queries if "django_session" in q["sql"] and not q["sql"].startswith("SELECT")]


@pytest.fixture
def drafter(client, dataset, make_worker):
    """A validator logged in, with three batches' worth of pairs to label."""
    for _ in range(15):
        make_pair(dataset)
    make_worker("drafter")
    client.login(username="drafter", password="worker-pass-1")
    return client


def submit_a_batch(client):
    client.get(reverse("validation:next"))
    batch = present(ValidationClaim.objects.filter(worker__user__username="drafter", status="open").first()).batch
    pairs = ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)
    url = reverse("validation:batch", kwargs={"batch": batch})
    with CaptureQueriesContext(connection) as queries:
        response = client.post(url, {item_field(pk): "neutral" for pk in pairs})
    assert response.status_code == 302
    return batch, response, queries


def test_the_next_page_names_the_saved_batch_once_and_nothing_writes_the_session(drafter):
    client = drafter
    batch, response, queries = submit_a_batch(client)
    assert session_writes(queries) == []
    cookie = response.cookies[SAVED_DRAFTS_COOKIE]
    assert cookie.value == f"batch-{batch}" and cookie["httponly"] and cookie["samesite"] == "Lax"

    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("validation:next"), follow=True)
    assert NAMED.findall(page.content.decode()) == [f"batch-{batch}"]
    assert session_writes(queries) == []
    # Named once: the page cleared the cookie, so the page after it names nothing.
    assert client.cookies[SAVED_DRAFTS_COOKIE].value == ""
    assert NAMED.findall(client.get(page.request["PATH_INFO"]).content.decode()) == []


def test_saves_before_any_page_are_all_named_and_a_forged_cookie_names_only_draft_keys(drafter):
    client = drafter
    first, _, _ = submit_a_batch(client)
    second, response, _ = submit_a_batch(client)  # its next page was never shown (no render between)
    assert response.cookies[SAVED_DRAFTS_COOKIE].value == f"batch-{first}.batch-{second}"

    many = ".".join(f"batch-{n}" for n in range(SAVED_DRAFTS_KEPT + 5))
    client.cookies[SAVED_DRAFTS_COOKIE] = f'{many}.x"onload="alert(1)'
    named = NAMED.findall(client.get(reverse("validation:faq")).content.decode())
    assert named == [" ".join(f"batch-{n}" for n in range(5, SAVED_DRAFTS_KEPT + 5))]
