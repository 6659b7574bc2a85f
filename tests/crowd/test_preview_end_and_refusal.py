"""A researcher's preview (crowd.preview) says one thing at a time and ends where it started:

- a submit the task refuses shows the task's own message ("nothing was saved yet") and not, above
  it, the preview's "nothing of that was saved": two messages saying the same in contradicting words;
- "End preview" goes back to the dashboard's study page the preview was started from, not to the
  admin; an address of another site in the start link is not followed.
"""

import html
import re
from typing import Any

import pytest
from django.contrib import messages
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.http import HttpResponseRedirect
from django.test import RequestFactory
from django.urls import reverse

from annotation_site.wiring import CLAIM_MODELS
from crowd.models import StudyAccess, StudySession
from crowd.preview import PREVIEW_NOTHING_SAVED, serve_preview
from crowd.services import worker_for_user
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

pytestmark = pytest.mark.django_db

BANNER = "nothing you do here is saved"
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def study():
    dataset, genre = writing_setup(slug="preview-end")
    add_premises(dataset, genre, 3)
    return make_study(dataset, slug="preview-end-study", access=StudyAccess.OPEN)


@pytest.fixture
def researcher_client(client, make_researcher):
    client.force_login(make_researcher("previewer"))
    return client


def shown_messages(page: str) -> list[str]:
    """The texts of the page's messages (the message list and the form's alerts), not its banner."""
    found = re.findall(r'<(?:li|p) class="message[^"]*"[^>]*>(.*?)</(?:li|p)>', page, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", text)).strip() for text in found]


def test_a_refused_submit_in_a_preview_says_once_that_nothing_was_saved(researcher_client, study):
    client = researcher_client
    client.post(reverse("study_preview_start", args=[study.slug]))
    task_url = client.get(reverse("writing_next"))["Location"]
    assert BANNER in client.get(task_url).content.decode()

    refused = client.post(task_url, {**GOOD, "neutral": GOOD["entailment"].upper()}, follow=True)

    page = refused.content.decode()
    assert refused.redirect_chain and refused.redirect_chain[-1][0] == task_url
    assert "same as your &#x27;definitely correct&#x27; sentence" in page
    said = shown_messages(page)
    assert any("nothing was saved yet" in text for text in said), said
    assert PREVIEW_NOTHING_SAVED not in said and "nothing of that was saved" not in page, said
    assert BANNER in page


def serve_in_preview(researcher, session, path, view):
    """Serve a POST to `path` by `view` as the preview serves it; the messages it leaves."""
    request: Any = RequestFactory().post(path)
    request.user = researcher
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    serve_preview(request, view, session, claim_models=CLAIM_MODELS)
    return [message.message for message in request._messages._queued_messages]


@pytest.mark.parametrize(
    ("goes_to", "says", "noted"),
    [
        ("/elsewhere/", None, True),  # another page: it may say "saved"
        ("/form/", "Saved.", True),  # its own page, saying "saved"
        ("/form/", None, False),  # its own page, refusing: the page says why
    ],
)
def test_the_preview_notes_nothing_saved_only_where_the_next_page_would_not_say_it(
    make_researcher, study, goes_to, says, noted
):
    researcher = make_researcher("previewer")
    session = StudySession.objects.create(
        study=study, worker=worker_for_user(researcher), external_session_id="researcher-preview", is_preview=True
    )

    def view(request):
        if says:
            messages.success(request, says)
        return HttpResponseRedirect(goes_to)

    said = serve_in_preview(researcher, session, "/form/", view)

    assert (PREVIEW_NOTHING_SAVED in said) is noted, said


def test_end_preview_lands_on_the_dashboard_study_page_it_started_from(researcher_client, study):
    client = researcher_client
    study_page = reverse("dashboard:study", args=[study.slug])
    link = re.search(r'<a id="preview-study" href="([^"]+)"', client.get(study_page).content.decode())
    assert link is not None
    start_url = html.unescape(link.group(1))
    form = client.get(start_url).content.decode()
    back = re.search(r'name="back" value="([^"]+)"', form)
    assert back is not None and html.unescape(back.group(1)) == study_page

    client.post(start_url, {"back": html.unescape(back.group(1))})
    assert BANNER in client.get(client.get(reverse("writing_next"))["Location"]).content.decode()
    ended = client.post(reverse("preview_end"))

    assert ended.status_code == 302 and ended["Location"] == study_page
    landed = client.get(study_page).content.decode()
    assert "ended: nothing of it was saved" in landed and BANNER not in landed


@pytest.mark.parametrize("elsewhere", ["https://evil.example/phish", "//evil.example/phish", "/\\evil.example"])
def test_end_preview_follows_no_address_of_another_site(researcher_client, study, elsewhere):
    client = researcher_client
    start_url = reverse("study_preview_start", args=[study.slug])
    assert "evil.example" not in client.get(start_url, {"back": elsewhere}).content.decode()
    client.post(start_url, {"back": elsewhere})

    ended = client.post(reverse("preview_end"))

    assert ended["Location"] == reverse("admin:crowd_study_change", args=[study.pk])
