"""A study's market connection (sealed credentials, the one-line test), approvals and rejections,
and the market's lists (against the market STAND-IN, tests/markets/standin.py)."""

import pytest
from django.db import connection as db

from corpus.models import Market, WorkerExclusion
from crowd.holds import hold
from markets import connections, lists, reviews, tasks
from markets.models import ListEntry, MarketCall, MarketConnection, ReviewState, SessionReview
from quality.guessers import GUESSER
from quality.models import QualificationAttempt, QualificationTest

from .conftest import arrive, connect_mturk, connect_prolific, make_study

pytestmark = pytest.mark.django_db


def test_credentials_never_reach_the_database_in_plain_text(standin):
    study = make_study()
    connect_prolific(study, standin)
    with db.cursor() as cursor:
        cursor.execute("SELECT * FROM markets_marketconnection")
        stored = " ".join(str(value) for value in cursor.fetchone())
    assert standin.prolific_token not in stored and "standin-webhook-secret" not in stored
    # Saving again with the secrets left blank keeps them.
    connections.save_connection(study, market="prolific", market_study_id=standin.study_id)
    assert connections.test_connection(MarketConnection.objects.get())[0]


def test_the_connection_test_says_what_is_wrong_in_one_line(standin):
    study = make_study()
    connection = connect_prolific(study, standin)
    assert connections.test_connection(connection) == (
        True,
        "Connected to Prolific as researcher@example.org: study “Stand-in study” (ACTIVE).",
    )
    connection = connections.save_connection(
        study, market="prolific", market_study_id="5fa0000000000000000000f4", token="wrong"
    )
    ok, line = connections.test_connection(connection)
    assert not ok and line.startswith("Prolific refused the API token (401)") and "\n" not in line
    connection = connections.save_connection(
        study, market="prolific", market_study_id="5fa0000000000000000000f4", token="standin-prolific-token"
    )
    ok, line = connections.test_connection(connection)
    assert not ok and line.startswith("Prolific does not know this (404): Study not found.")
    standin.fail("GET /api/v1/users/me/", "slow-before")
    ok, line = connections.test_connection(connection)
    assert not ok and line == "No answer from Prolific within 1 s."
    mturk = connect_mturk(make_study("on-mturk"), standin)
    assert connections.test_connection(mturk) == (True, "Connected to the MTurk sandbox: balance 10000.00 USD.")
    mturk = connections.save_connection(
        mturk.study,
        market="mturk",
        hit_type_id="3WRONGHITTYPE00000000000000001",
        access_key_id="AKIAWRONG",
        secret_access_key="x",
    )
    ok, line = connections.test_connection(mturk)
    assert not ok and line.startswith("MTurk refused the credentials (UnrecognizedClientException)")


def test_a_bad_connection_is_refused_with_a_reason():
    study = make_study()
    with pytest.raises(connections.ConnectionRefused, match="API token"):
        connections.save_connection(study, market="prolific", market_study_id="x")
    with pytest.raises(connections.ConnectionRefused, match="HIT type"):
        connections.save_connection(study, market="mturk", access_key_id="a", secret_access_key="b")


def test_approving_sends_every_checked_session_once_and_never_a_held_code(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin, approve_automatically=True)
    sessions = arrive(study, standin, django_user_model, 4)
    held = sessions[3]
    held.completion_code = ""
    held.save()
    hold(held, GUESSER, "Labels at chance so far (sequential guesser test).")

    done = tasks.approve_checked_sessions()

    assert done == ["Approved on the market: 3."]
    approved = {row["participant_id"] for row in standin.submissions.values() if row["status"] == "APPROVED"}
    assert approved == {s.worker.external_id for s in sessions[:3]}
    assert SessionReview.objects.filter(state=ReviewState.CONFIRMED, automatic=True).count() == 3
    assert tasks.approve_checked_sessions() == ["Approved on the market: 0."]
    # A researcher may approve the held one by naming it; twice is once.
    assert reviews.approve_sessions(study, [held.pk]).confirmed == 1
    assert reviews.approve_sessions(study, [held.pk]).skipped == 1
    assert MarketCall.objects.filter(action="approve").count() == 2


def test_a_rejection_needs_a_reason_and_records_the_markets_answer(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    session = arrive(study, standin, django_user_model, 1)[0]
    with pytest.raises(connections.ConnectionRefused, match="reason"):
        reviews.reject_session(session, "   ")
    assert not SessionReview.objects.exists()

    outcome = reviews.reject_session(session, "Most catch trials were answered at random.", category="FAILED_CHECK")

    assert outcome.confirmed == 1
    assert standin.submissions[session.external_session_id]["status"] == "REJECTED"
    call = MarketCall.objects.get(action="reject")
    assert call.ok and call.status_code == 200 and '"REJECTED"' in call.answer
    assert "FAILED_CHECK" in call.request_summary and standin.prolific_token not in call.request_summary


def test_a_market_error_on_an_approval_is_recorded_and_it_stays_queued_to_be_sent_again(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    session = arrive(study, standin, django_user_model, 1)[0]
    standin.fail("approve", "500")
    first = reviews.approve_sessions(study)
    # A 5xx refused nothing: the approval stays queued (tests/markets/test_reviews_queue.py).
    assert (first.failed, first.unanswered) == (0, 1) and "Prolific had an error (500)" in first.errors[0]
    assert SessionReview.objects.get().state == ReviewState.SENT
    assert reviews.approve_sessions(study, [session.pk]).confirmed == 1


def test_mturk_approvals_and_rejections(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    first, second = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    assert reviews.approve_sessions(study, [first.pk]).confirmed == 1
    assert reviews.reject_session(second, "The code given was not this study's.").confirmed == 1
    assert standin.assignments[first.external_session_id]["AssignmentStatus"] == "Approved"
    assert standin.assignments[second.external_session_id]["AssignmentStatus"] == "Rejected"


def test_qualified_and_excluded_workers_go_to_the_markets_lists_once(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(
        study, standin, qualified_list_id="5fa0000000000000000000b1", excluded_list_id="5fa0000000000000000000b2"
    )
    passed, failed, excluded = arrive(study, standin, django_user_model, 3)
    test = QualificationTest.objects.create(study=study)
    QualificationAttempt.objects.create(
        test=test, worker=passed.worker, number=1, correct=5, total=5, score=1, passed=True
    )
    QualificationAttempt.objects.create(
        test=test, worker=failed.worker, number=1, correct=1, total=5, score=0.2, passed=False
    )
    WorkerExclusion.objects.create(worker=excluded.worker, team_id=study.dataset.team_id)

    line = lists.sync_lists(connection)

    assert line == "qualified: 1 added; excluded: 1 added"
    assert standin.groups == {
        "5fa0000000000000000000b1": {passed.worker.external_id},
        "5fa0000000000000000000b2": {excluded.worker.external_id},
    }
    assert lists.sync_lists(connection) == "qualified: nobody new; excluded: nobody new"
    assert ListEntry.objects.count() == 2

    mturk = connect_mturk(make_study("on-mturk"), standin, qualified_list_id="3STANDINQUALTYPE00000000000001")
    worker = arrive(mturk.study, standin, django_user_model, 1, market=Market.MTURK)[0]
    mturk_test = QualificationTest.objects.create(study=mturk.study)
    QualificationAttempt.objects.create(
        test=mturk_test, worker=worker.worker, number=1, correct=5, total=5, score=1, passed=True
    )
    assert lists.sync_lists(mturk) == "qualified: 1 added"
    assert standin.qualified["3STANDINQUALTYPE00000000000001"] == {worker.worker.external_id}
