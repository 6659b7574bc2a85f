"""Study links name a participant, not a browser: a browser new to a
participant id already seen elsewhere is asked before it becomes that participant, and a session's
completion code is shown only in the browser whose submit finished it. A participant's own first
arrival and return in the same browser need no click."""

import pytest
from django.test import Client
from django.urls import reverse

from crowd.models import StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

IDS = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc", "SESSION_ID": "sess-001"}
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 6)
    return make_study(dataset, tasks_per_batch=1, completion_code="CODE-1")


def entry(study):
    return reverse("study_entry", args=[study.slug])


def finish_the_task(browser):
    task = browser.get(reverse("writing_next"))["Location"]
    return browser.post(task, GOOD, follow=True).content.decode()


def test_first_arrival_and_the_same_browser_returning_need_no_click(client, study):
    assert client.get(entry(study), IDS)["Location"] == reverse("writing_next")
    assert client.get(entry(study), IDS)["Location"] == reverse("writing_next")
    client.post(reverse("logout"))  # a browser keeps its device cookie when its user logs out
    assert client.get(entry(study), IDS)["Location"] == reverse("writing_next")
    assert client.get(entry(study), {**IDS, "SESSION_ID": "sess-002"})["Location"] == reverse("writing_next")


def test_another_browser_with_the_same_ids_is_asked_before_it_becomes_the_participant(client, study):
    client.get(entry(study), IDS)
    other = Client()
    page = other.get(entry(study), IDS)
    assert page.status_code == 200 and "used in another browser" in page.content.decode()
    assert "_auth_user_id" not in other.session
    assert StudySession.objects.count() == 1
    # Only a POST continues, and then the browser is that participant.
    continued = other.post(entry(study), {**IDS, "switch": "yes"})
    assert continued["Location"] == reverse("writing_next")
    assert int(other.session["_auth_user_id"]) == StudySession.objects.get().worker.user_id
    # From now on this browser is one of the participant's: no question when it comes back.
    assert other.get(entry(study), IDS)["Location"] == reverse("writing_next")


def test_a_browser_that_only_knows_the_ids_does_not_see_the_completion_code(client, study):
    client.get(entry(study), IDS)
    done = finish_the_task(client)
    code = StudySession.objects.get().completion_code
    assert code and code in done
    other = Client()
    other.post(entry(study), {**IDS, "switch": "yes"})  # presses "continue" as an attacker would
    page = other.get(reverse("writing_next"), follow=True).content.decode()
    assert code not in page and "finished in another browser" in page
    # The participant's own browser still shows it.
    assert code in client.get(reverse("writing_next")).content.decode()


def test_the_browser_that_does_the_work_gets_the_code(client, study):
    client.get(entry(study), IDS)  # opened on one device, then moved to another before working
    moved = Client()
    moved.post(entry(study), {**IDS, "switch": "yes"})
    done = finish_the_task(moved)
    code = StudySession.objects.get().completion_code
    assert code in done
    assert code not in client.get(reverse("writing_next"), follow=True).content.decode()


def test_a_session_from_before_browsers_were_recorded_shows_its_code_as_before(client, study):
    client.get(entry(study), IDS)
    finish_the_task(client)
    session = StudySession.objects.get()
    StudySession.objects.filter(pk=session.pk).update(device="")
    fresh = Client()
    fresh.post(entry(study), {**IDS, "switch": "yes"})
    assert session.completion_code in fresh.get(reverse("writing_next")).content.decode()
