"""An identity is real when the market says so.

The attack: a study link's PROLIFIC_PID / workerId was believed as it came. A participant id that
is not the submission's owner got a code like anyone. Now, with a market connection, each arrival
is checked once against the market's own record (the STAND-IN market, tests/markets/standin.py: a
real HTTP server), the answer is stored on the session, and a session the market does not vouch
for keeps its code held; a forged one is excluded, its labels out of gold, and linked to the owner.
"""

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from corpus.models import Market, Worker
from crowd import hold_kinds
from crowd.holds import UNVOUCHED, money_may_go
from crowd.models import MarketCheck, Study, StudySession, WorkerLink
from crowd.services import record_task_done
from markets import identity
from markets.models import MarketCall
from markets.tasks import check_pending_arrivals

from .conftest import connect_mturk, connect_prolific, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def checks_in_this_process(settings):
    """The check runs in this process, as the embedded mode runs it, in the broker pass too (the
    suite's Celery worker does not reach this test's stand-in market)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"


def arrive_prolific(client, study, pid, session_id, study_id):
    return client.get(
        reverse("study_entry", args=[study.slug]),
        {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id},
    )


def arrive_mturk(client, study, worker_id, assignment_id, hit_id="standin-hit-1"):
    return client.get(
        reverse("study_entry", args=[study.slug]),
        {"workerId": worker_id, "assignmentId": assignment_id, "hitId": hit_id},
    )


def session_of(external_id):
    return StudySession.objects.select_related("worker").get(worker__external_id=external_id)


def test_the_owner_of_the_submission_is_vouched_for_and_gets_their_code(standin, django_capture_on_commit_callbacks):
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f0000000000000000000001", "owner-pid")
    with django_capture_on_commit_callbacks(execute=True):
        arrive_prolific(Client(), study, "owner-pid", "5f0000000000000000000001", standin.study_id)
    session = session_of("owner-pid")
    assert session.market_check == MarketCheck.VOUCHED
    assert session.market_participant_id == "owner-pid"
    assert ("GET", "/api/v1/submissions/5f0000000000000000000001/") in standin.requests
    record_task_done(session)
    session.refresh_from_db()
    assert session.completion_code == session.expected_completion_code()
    assert not session.code_holds.exists()


def test_a_forged_participant_id_is_refused_linked_to_the_owner_and_excluded(
    standin, make_worker, django_capture_on_commit_callbacks
):
    study = make_study()
    connect_prolific(study, standin)
    owner = make_worker(market=Market.PROLIFIC, external_id="owner-pid")
    standin.add_submission("5f0000000000000000000002", "owner-pid")
    with django_capture_on_commit_callbacks(execute=True):
        arrive_prolific(Client(), study, "forged-pid", "5f0000000000000000000002", standin.study_id)
    session = session_of("forged-pid")
    assert session.market_check == MarketCheck.REFUSED
    assert "owner-pid" in session.market_check_note
    assert session.market_participant_id == "owner-pid"
    forger = session.worker
    forger.refresh_from_db()
    assert forger.exclusions.exists()  # its labels leave gold as every excluded worker's do
    assert WorkerLink.objects.filter(worker=forger, linked=owner).exists()
    assert WorkerLink.objects.filter(worker=owner, linked=forger).exists()
    record_task_done(session)
    session.refresh_from_db()
    assert session.completion_code == ""
    (held,) = session.code_holds.all()
    assert held.kind == UNVOUCHED and held.text.startswith("Not vouched for by the market")


def test_a_submission_prolific_does_not_know_is_refused(standin, django_capture_on_commit_callbacks):
    study = make_study()
    connect_prolific(study, standin)
    with django_capture_on_commit_callbacks(execute=True):
        arrive_prolific(Client(), study, "made-up-pid", "5f00000000000000000000ff", standin.study_id)
    session = session_of("made-up-pid")
    assert session.market_check == MarketCheck.REFUSED
    assert "no submission" in session.market_check_note


def test_another_studys_id_in_the_link_is_refused_without_asking(standin, django_capture_on_commit_callbacks):
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f0000000000000000000003", "pid-3")
    with django_capture_on_commit_callbacks(execute=True):
        arrive_prolific(Client(), study, "pid-3", "5f0000000000000000000003", "some-other-study")
    session = session_of("pid-3")
    assert session.market_check == MarketCheck.REFUSED
    assert "STUDY_ID" in session.market_check_note


def test_a_market_that_is_down_holds_the_code_until_it_vouches(standin, django_capture_on_commit_callbacks):
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f0000000000000000000004", "pid-4")
    # Down for the check at arrival and for the task's first try after it.
    standin.fail("submission.get", "500", times=2)
    client = Client()
    with django_capture_on_commit_callbacks(execute=True):
        response = arrive_prolific(client, study, "pid-4", "5f0000000000000000000004", standin.study_id)
    assert response.status_code == 302  # the participant went on to the task, not kept waiting
    session = session_of("pid-4")
    assert session.market_check == MarketCheck.PENDING
    assert "did not answer" in session.market_check_note
    assert MarketCall.objects.filter(action="submission.get", ok=False).exists()
    record_task_done(session)
    session.refresh_from_db()
    assert session.completion_code == "" and session.code_holds.get().kind == UNVOUCHED
    # The beat's sweep asks again once the market is back: the code is given then.
    assert check_pending_arrivals() == [f"{session.pk}: {MarketCheck.VOUCHED}"]
    session.refresh_from_db()
    assert session.market_check == MarketCheck.VOUCHED
    assert session.code_held_reason == "" and not session.code_holds.exists()
    assert session.completion_code == session.expected_completion_code()


def test_a_hold_for_another_reason_stays_when_the_market_vouches(standin, monkeypatch):
    """Both reasons are kept at completion (not only the first); the market's answer lifts its own."""
    monkeypatch.setitem(
        hold_kinds._kinds,
        "guessing",
        hold_kinds.HoldKind("guessing", "guessing", check=lambda s: "Labels at chance so far."),
    )
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f0000000000000000000005", "pid-5")
    worker = Worker.objects.create(
        user=User.objects.create(username="p5"),
        market=Market.PROLIFIC,
        external_id="pid-5",
    )
    session = StudySession.objects.create(
        study=study,
        worker=worker,
        external_study_id=standin.study_id,
        external_session_id="5f0000000000000000000005",
        market_check=MarketCheck.PENDING,
    )
    record_task_done(session)
    assert set(session.code_holds.values_list("kind", flat=True)) == {"guessing", UNVOUCHED}
    identity.check_session(session.pk)
    session.refresh_from_db()
    assert session.market_check == MarketCheck.VOUCHED
    assert list(session.code_holds.values_list("kind", "text")) == [("guessing", "Labels at chance so far.")]
    assert session.code_held_reason == "Labels at chance so far."
    assert session.completion_code == ""


def test_a_market_refusal_after_completion_keeps_the_other_reasons_and_replaces_its_own_wait(standin, monkeypatch):
    """The refusal used to overwrite the session's one reason; each reason is a record now."""
    monkeypatch.setitem(
        hold_kinds._kinds,
        "guessing",
        hold_kinds.HoldKind("guessing", "guessing", check=lambda s: "Labels at chance so far."),
    )
    study = make_study()
    worker = Worker.objects.create(user=User.objects.create(username="p6"), market=Market.PROLIFIC, external_id="pid-6")
    session = StudySession.objects.create(
        study=study, worker=worker, external_session_id="5f0000000000000000000006", market_check=MarketCheck.PENDING
    )
    record_task_done(session)
    answer = identity.MarketAnswer(MarketCheck.REFUSED, "Prolific's submission is owner's.", "owner")
    identity.store_answer(session.pk, worker.pk, answer)
    session.refresh_from_db()
    assert list(session.code_holds.values_list("kind", "text")) == [
        ("guessing", "Labels at chance so far."),
        (UNVOUCHED, "Not vouched for by the market: Prolific's submission is owner's."),
    ]
    assert (
        session.code_held_reason
        == "Labels at chance so far.; Not vouched for by the market: Prolific's submission is owner's."
    )
    assert session.completion_code == "" and not StudySession.objects.filter(money_may_go(), pk=session.pk).exists()


def test_mturk_an_assignment_of_another_worker_is_refused_and_one_not_yet_listed_waits(
    standin, django_capture_on_commit_callbacks
):
    study = make_study(slug="mturk-study")
    connect_mturk(study, standin)
    standin.add_assignment("ASSIGN-OWNER", "OWNERWORKER", "standin-hit-1")
    with django_capture_on_commit_callbacks(execute=True):
        arrive_mturk(Client(), study, "FORGER", "ASSIGN-OWNER")
        arrive_mturk(Client(), study, "NEWWORKER", "ASSIGN-NOT-SUBMITTED")
    forged = session_of("FORGER")
    assert forged.market_check == MarketCheck.REFUSED
    assert "OWNERWORKER" in forged.market_check_note
    waiting = session_of("NEWWORKER")
    assert waiting.market_check == MarketCheck.PENDING
    # Held as a waiting Prolific session is: no code, no money, until MTurk lists the assignment.
    record_task_done(waiting)
    waiting.refresh_from_db()
    assert waiting.completion_code == ""
    assert waiting.code_holds.get().text.startswith("Not vouched for by the market yet: waiting for MTurk")
    assert not StudySession.objects.filter(money_may_go(), pk=waiting.pk).exists()
    standin.add_assignment("ASSIGN-NOT-SUBMITTED", "NEWWORKER", "standin-hit-1")
    check_pending_arrivals()
    waiting.refresh_from_db()
    assert waiting.market_check == MarketCheck.VOUCHED
    assert not waiting.code_holds.exists() and waiting.completion_code == waiting.expected_completion_code()
    assert StudySession.objects.filter(money_may_go(), pk=waiting.pk).exists()


def test_a_held_mturk_assignment_is_still_submitted_to_mturk_without_its_code(
    standin, django_capture_on_commit_callbacks
):
    """MTurk lists an assignment only once it is submitted: a held page that did not submit it would
    wait for ever."""
    study = make_study(slug="mturk-held")
    connect_mturk(study, standin)
    browser = Client()
    with django_capture_on_commit_callbacks(execute=True):
        browser.get(
            reverse("study_entry", args=[study.slug]),
            {
                "workerId": "HELDWORKER",
                "assignmentId": "ASSIGN-HELD",
                "hitId": "standin-hit-1",
                "turkSubmitTo": "https://workersandbox.mturk.com",
            },
        )
    session = session_of("HELDWORKER")
    record_task_done(session)
    session.refresh_from_db()
    assert session.code_is_held
    page = browser.get(reverse("validation:next"), follow=True).content.decode()
    assert 'id="completion-held"' in page
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in page
    assert 'name="assignmentId" value="ASSIGN-HELD"' in page
    assert "completion_code" not in page and session.expected_completion_code() not in page


def test_a_study_without_a_connection_says_its_ids_are_unchecked(client, researcher, standin):
    plain = make_study(slug="no-market")
    # Paid and unconnected: it takes participants only as an open link (crowd.arrival.launch_refusal).
    Study.objects.filter(pk=plain.pk).update(open_link_unverified=True)
    connected = make_study(slug="with-market")
    connect_prolific(connected, standin)
    arrive_prolific(Client(), plain, "pid-plain", "5f0000000000000000000006", "x")
    assert session_of("pid-plain").market_check == MarketCheck.UNCHECKED
    client.force_login(researcher)
    page = client.get(reverse("dashboard:study", args=[plain.slug])).content.decode()
    assert 'id="ids-unchecked"' in page and "participant ids are unchecked" in page
    page = client.get(reverse("dashboard:study", args=[connected.slug])).content.decode()
    assert 'id="ids-checked"' in page and 'id="ids-unchecked"' not in page


def test_the_study_page_shows_why_a_session_was_refused(
    client, researcher, standin, django_capture_on_commit_callbacks
):
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f0000000000000000000007", "owner-7")
    with django_capture_on_commit_callbacks(execute=True):
        arrive_prolific(Client(), study, "forger-7", "5f0000000000000000000007", standin.study_id)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert 'data-check="refused"' in page
    assert "participant owner-7&#x27;s, not forger-7&#x27;s" in page or "participant owner-7's, not forger-7's" in page


def test_the_sessions_admin_shows_the_market_check_and_why(
    client, admin_user, standin, django_capture_on_commit_callbacks
):
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f0000000000000000000008", "owner-8")
    with django_capture_on_commit_callbacks(execute=True):
        arrive_prolific(Client(), study, "forger-8", "5f0000000000000000000008", standin.study_id)
    session = session_of("forger-8")
    client.force_login(admin_user)
    listing = client.get(reverse("admin:crowd_studysession_changelist"), {"market_check__exact": "refused"})
    shown = listing.content.decode()
    assert f'value="{session.pk}"' in shown  # the refused session, found by the filter
    assert "the market&#x27;s record is someone else&#x27;s" in shown
    page = client.get(reverse("admin:crowd_studysession_change", args=[session.pk])).content.decode()
    assert "is participant owner-8" in page
