"""Arrival from Prolific and Mechanical Turk: ids in the URL become a worker and a study session."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from corpus.models import Market, Worker
from crowd import arrival, services
from crowd.models import StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

PROLIFIC = {
    "PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e",
    "STUDY_ID": "60aa11bb22cc33dd44ee55ff",
    "SESSION_ID": "sess-001",
}
MTURK = {"workerId": "A1B2C3D4E5F6G7", "assignmentId": "3ABCDEF123456789", "hitId": "3HITID0000000001"}
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 5)
    return make_study(dataset, tasks_per_batch=2, completion_code="PROLIFIC-DONE-42")


def entry(study):
    return reverse("study_entry", args=[study.slug])


def nothing_created():
    return not Worker.objects.exists() and not StudySession.objects.exists() and not get_user_model().objects.exists()


def test_prolific_arrival_creates_a_logged_in_worker_and_a_session(client, study):
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 302 and response["Location"] == reverse("writing_next")
    worker = Worker.objects.get()
    assert (worker.market, worker.external_id) == (Market.PROLIFIC, PROLIFIC["PROLIFIC_PID"])
    assert not worker.user.has_usable_password()
    assert int(client.session["_auth_user_id"]) == worker.user.pk
    session = StudySession.objects.get()
    assert (session.study, session.worker) == (study, worker)
    assert (session.external_study_id, session.external_session_id) == (PROLIFIC["STUDY_ID"], PROLIFIC["SESSION_ID"])
    assert client.session[arrival.SESSION_KEY] == session.pk
    # The task it leads to belongs to the session.
    task = client.get(response["Location"])
    assert task.status_code == 302
    assert worker.writing_claims.get().study_session == session


def test_coming_back_resumes_the_same_worker_and_session(client, study):
    client.get(entry(study), PROLIFIC)
    # The site's logout, as a browser does it: the browser keeps its device cookie (the test
    # client's logout() drops every cookie, which is another browser: tests/crowd/test_study_link_takeover.py).
    client.post(reverse("logout"))
    client.get(entry(study), PROLIFIC)
    assert Worker.objects.count() == 1 and StudySession.objects.count() == 1
    client.get(entry(study), {**PROLIFIC, "SESSION_ID": "sess-002"})
    assert Worker.objects.count() == 1
    assert sorted(StudySession.objects.values_list("external_session_id", flat=True)) == ["sess-001", "sess-002"]


def test_mturk_arrival(client, study):
    response = client.get(entry(study), MTURK)
    assert response.status_code == 302
    worker = Worker.objects.get()
    assert (worker.market, worker.external_id) == (Market.MTURK, MTURK["workerId"])
    session = StudySession.objects.get()
    assert (session.external_study_id, session.external_session_id) == (MTURK["hitId"], MTURK["assignmentId"])


def test_mturk_preview_shows_the_task_and_creates_nothing(client, study):
    response = client.get(entry(study), {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "3HIT"})
    assert response.status_code == 200
    assert "This is a preview" in response.content.decode()
    assert nothing_created()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    "kind, scheme, words",
    [
        (TaskKind.MPE_JUDGMENT, "three_way", "four short descriptions of one scene"),
        (TaskKind.VALIDATION, "two_way", "definitely correct given the first, or not"),
        (TaskKind.ADVERSARIAL, "three_way", "a computer model gets wrong"),
    ],
)
def test_mturk_preview_describes_the_studys_own_task(db, client, kind, scheme, words):
    from corpus.models import Dataset, ItemKind
    from crowd.models import MULTI_PREMISE_TASKS, Study

    item_kind = ItemKind.MULTI_PREMISE if kind in MULTI_PREMISE_TASKS else ItemKind.SINGLE_PREMISE
    dataset = Dataset.objects.create(slug=f"preview-{kind}", name="P", label_scheme=scheme, item_kind=item_kind)
    study = Study.objects.create(slug=f"preview-{kind}", name="P", dataset=dataset, task_kind=kind, completion_code="C")
    page = client.get(entry(study), {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "3HIT"}).content.decode()
    assert "This is a preview" in page and words in page
    assert "write three short sentences" not in page or kind == TaskKind.WRITING


@pytest.mark.parametrize(
    "params, problem",
    [
        ({}, "carries no worker ids"),
        ({"PROLIFIC_PID": "5f1a2b", "STUDY_ID": "60aa"}, "SESSION_ID is missing"),
        ({**PROLIFIC, "PROLIFIC_PID": "{{%PROLIFIC_PID%}}"}, "PROLIFIC_PID is not a valid id"),
        ({**PROLIFIC, "PROLIFIC_PID": "<script>alert(1)</script>"}, "PROLIFIC_PID is not a valid id"),
        ({"workerId": "A1B2", "hitId": "3HIT"}, "assignmentId is missing"),
        ({**MTURK, "workerId": "has space"}, "workerId is not a valid id"),
    ],
)
def test_missing_or_invalid_ids_are_a_clear_400(client, study, params, problem):
    response = client.get(entry(study), params)
    assert response.status_code == 400
    assert problem in response.content.decode()
    assert "<script>alert" not in response.content.decode()
    assert nothing_created()


def test_an_inactive_study_says_it_is_closed(client, study):
    study.is_active = False
    study.save()
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 410
    assert "This study is closed" in response.content.decode()
    assert nothing_created()


def test_an_unknown_study_is_a_404(client, db):
    assert client.get(reverse("study_entry", args=["no-such-study"]), PROLIFIC).status_code == 404


def test_a_validation_study_sends_workers_to_validation(client, study):
    study.task_kind = TaskKind.VALIDATION
    study.save()
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 302 and response["Location"] == "/validate/next/"
    assert StudySession.objects.get().study == study


def test_a_logged_in_researcher_who_follows_a_link_is_asked_and_switches_only_by_post(client, study, researcher):
    client.force_login(researcher)
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 200
    page = response.content.decode()
    assert "You are logged in as researcher" in page and 'method="post"' in page
    # The GET changed nothing: still the researcher, no worker, no session.
    assert int(client.session["_auth_user_id"]) == researcher.pk
    assert not Worker.objects.exists() and not StudySession.objects.exists()
    response = client.post(entry(study), {**PROLIFIC, "switch": "yes"})
    assert response.status_code == 302 and response["Location"] == reverse("writing_next")
    assert int(client.session["_auth_user_id"]) == Worker.objects.get().user.pk
    assert client.session[arrival.SESSION_KEY] == StudySession.objects.get().pk


def test_a_post_without_the_switch_answer_changes_nothing(client, study, researcher):
    client.force_login(researcher)
    assert client.post(entry(study), PROLIFIC).status_code == 200
    assert int(client.session["_auth_user_id"]) == researcher.pk and not Worker.objects.exists()


def test_the_same_worker_coming_back_is_not_asked(client, study):
    client.get(entry(study), PROLIFIC)
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 302


def test_after_the_batch_the_next_task_shows_the_completion_code(client, study):
    study.completion_url = "https://app.prolific.example/submissions/complete?cc=PROLIFIC-DONE-42"
    study.save()
    client.get(entry(study), PROLIFIC)
    for _ in range(study.tasks_per_batch):
        task_url = client.get(reverse("writing_next"))["Location"]
        assert client.post(task_url, GOOD).status_code == 302
    session = StudySession.objects.get()
    assert session.tasks_done == 2 and session.is_complete
    response = client.get(reverse("writing_next"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "PROLIFIC-DONE-42" in page
    assert 'href="https://app.prolific.example/submissions/complete?cc=PROLIFIC-DONE-42"' in page
    assert session.worker.writing_claims.count() == 2  # no third claim once complete
    # Following the study link again also ends on the code, not on more work.
    assert "PROLIFIC-DONE-42" in client.get(entry(study), PROLIFIC, follow=True).content.decode()


def test_parse_arrival_prefers_the_market_whose_ids_are_present(db):
    assert arrival.parse_arrival(PROLIFIC).market == Market.PROLIFIC
    assert arrival.parse_arrival(MTURK).market == Market.MTURK
    with pytest.raises(arrival.ArrivalError):
        arrival.parse_arrival({"PROLIFIC_PID": "", "STUDY_ID": "x", "SESSION_ID": "y"})


def test_study_session_of_another_worker_is_ignored(client, study, make_worker):
    client.get(entry(study), PROLIFIC)
    session_id = client.session[arrival.SESSION_KEY]
    other = make_worker()
    client.force_login(other.user)
    s = client.session
    s[arrival.SESSION_KEY] = session_id
    s.save()
    client.get(reverse("writing_next"))
    assert other.writing_claims.get().study_session is None
    assert services.worker_for_user(other.user) == other


def test_a_writing_participants_home_offers_only_writing(client, study):
    client.get(entry(study), PROLIFIC)
    page = client.get(reverse("home")).content.decode()
    assert reverse("writing_next") in page
    # A validation button would lead to "not part of your study" (403).
    assert reverse("validation:next") not in page
    assert client.get(reverse("validation:next")).status_code == 403


def test_a_worker_outside_a_study_is_offered_both_kinds(client, make_worker):
    worker = make_worker(username="plain-worker")
    client.force_login(worker.user)
    page = client.get(reverse("home")).content.decode()
    assert reverse("writing_next") in page and reverse("validation:next") in page
