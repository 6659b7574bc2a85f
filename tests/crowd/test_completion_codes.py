"""Completion codes that prove the work: one code per session, only once its tasks are done,
the participant sent back to the market, and the researcher's list of completed sessions."""

import csv
import io

import pytest
from django.urls import reverse

from crowd import codes
from crowd.models import StudySession
from crowd.services import record_task_done
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc", "SESSION_ID": "sess-001"}
MTURK = {"workerId": "A1B2C3D4E5F6G7", "assignmentId": "3ABCDEF123456789", "hitId": "3HITID0000000001"}
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 12)
    return make_study(dataset, tasks_per_batch=2, completion_code="STUDY-7")


def arrive(client, study, params):
    response = client.get(reverse("study_entry", args=[study.slug]), params)
    assert response.status_code == 302, response.content
    return StudySession.objects.get(external_session_id=params.get("SESSION_ID") or params["assignmentId"])


def write_one(client):
    task_url = client.get(reverse("writing_next"))["Location"]
    assert client.post(task_url, GOOD).status_code == 302


def finish(client, study):
    for _ in range(study.tasks_per_batch):
        write_one(client)


def test_each_session_gets_its_own_code_verifiable_with_the_study_secret(client, study, django_user_model):
    arrive(client, study, PROLIFIC)
    finish(client, study)
    client.logout()
    arrive(client, study, {**PROLIFIC, "PROLIFIC_PID": "otherpid0001", "SESSION_ID": "sess-002"})
    finish(client, study)
    first, second = StudySession.objects.order_by("pk")
    assert first.completion_code and second.completion_code and first.completion_code != second.completion_code
    assert first.completion_code.startswith("STUDY-7-")
    for session in (first, second):
        assert session.completion_code == codes.completion_code(
            study.completion_code, study.code_secret, study.pk, session.pk
        )
    # One session's code does not verify for another session, nor under another study's secret.
    assert first.completion_code != codes.completion_code(study.completion_code, study.code_secret, study.pk, second.pk)
    assert first.completion_code != codes.completion_code(
        study.completion_code, codes.new_study_secret(), study.pk, first.pk
    )


def test_studies_have_different_secrets(study):
    other = make_study(study.dataset, slug="study-two")
    assert study.code_secret != other.code_secret and len(study.code_secret) == 64


def test_no_code_before_the_tasks_are_done(client, study):
    session = arrive(client, study, PROLIFIC)
    write_one(client)
    session.refresh_from_db()
    assert session.tasks_done == 1 and not session.is_complete and session.completion_code == ""
    response = client.get(reverse("writing_next"), follow=True)
    assert "STUDY-7" not in response.content.decode()
    # The completion page itself refuses an unfinished session: it sends back to the work.
    from django.test import RequestFactory

    from crowd.views import completion_page

    request = RequestFactory().get("/")
    assert completion_page(request, session).status_code == 302


def test_record_task_done_sets_the_code_with_the_completion(study, make_worker):
    session = StudySession.objects.create(study=study, worker=make_worker(), external_session_id="s1")
    record_task_done(session)
    assert StudySession.objects.get().completion_code == ""
    record_task_done(session)
    stored = StudySession.objects.get()
    assert stored.completion_code == session.completion_code == stored.expected_completion_code()


def test_prolific_participant_is_sent_back_with_the_session_code(client, study):
    study.completion_url = "https://app.prolific.com/submissions/complete?cc={code}"
    study.save()
    arrive(client, study, PROLIFIC)
    finish(client, study)
    code = StudySession.objects.get().completion_code
    page = client.get(reverse("writing_next")).content.decode()
    expected = f"https://app.prolific.com/submissions/complete?cc={code}"
    assert f'href="{expected}"' in page
    assert f'<meta http-equiv="refresh" content="8;url={expected}">' in page
    assert code in page


def test_mturk_participant_gets_the_external_submit_form(client, study):
    arrive(client, study, {**MTURK, "turkSubmitTo": "https://workersandbox.mturk.com"})
    finish(client, study)
    session = StudySession.objects.get()
    page = client.get(reverse("writing_next")).content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page
    assert f'name="assignmentId" value="{MTURK["assignmentId"]}"' in page
    assert f'name="completion_code" value="{session.completion_code}"' in page
    assert "js/autosubmit.js" in page


def test_mturk_participant_of_a_study_with_a_prolific_url_still_submits_the_hit(client, study):
    study.completion_url = "https://app.prolific.com/submissions/complete?cc={code}"
    study.save()
    arrive(client, study, {**MTURK, "turkSubmitTo": "https://www.mturk.com"})
    finish(client, study)
    page = client.get(reverse("writing_next")).content.decode()
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in page
    assert "app.prolific.com" not in page


@pytest.mark.parametrize(
    "submit_to", ["https://evil.example", "javascript:alert(1)", "https://www.mturk.com.evil.example"]
)
def test_mturk_submit_host_outside_mturk_is_ignored(client, study, submit_to):
    arrive(client, study, {**MTURK, "turkSubmitTo": submit_to})
    finish(client, study)
    assert StudySession.objects.get().turk_submit_to == ""
    page = client.get(reverse("writing_next")).content.decode()
    assert "externalSubmit" not in page and "evil" not in page and "javascript:" not in page


def test_researcher_sees_and_exports_completed_sessions(client, study, researcher):
    arrive(client, study, PROLIFIC)
    finish(client, study)
    client.logout()
    arrive(client, study, {**PROLIFIC, "PROLIFIC_PID": "unfinished01", "SESSION_ID": "sess-009"})
    write_one(client)
    client.logout()
    client.force_login(researcher)
    listing = client.get(reverse("admin:crowd_study_changelist")).content.decode()
    assert f"?study__id__exact={study.pk}&amp;completed=yes" in listing
    done = StudySession.objects.get(completed_at__isnull=False)
    sessions = client.get(
        reverse("admin:crowd_studysession_changelist"), {"study__id__exact": study.pk, "completed": "yes"}
    )
    assert done.completion_code in sessions.content.decode() and "sess-009" not in sessions.content.decode()

    response = client.post(
        reverse("admin:crowd_study_changelist"),
        {"action": "export_completions", "_selected_action": [study.pk]},
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][-1] == "completion_code"
    assert len(rows) == 2  # the header and the one completed session
    assert rows[1][0] == study.slug and rows[1][2] == PROLIFIC["PROLIFIC_PID"]
    assert rows[1][4] == PROLIFIC["SESSION_ID"] and rows[1][-1] == done.completion_code


def test_a_worker_cannot_export(client, study, make_worker):
    client.force_login(make_worker().user)
    response = client.post(
        reverse("admin:crowd_study_changelist"), {"action": "export_completions", "_selected_action": [study.pk]}
    )
    assert response.status_code in (302, 403)
    assert "completion_code" not in response.content.decode()
