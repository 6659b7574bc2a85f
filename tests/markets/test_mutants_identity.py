"""The identity path's edges that mutmut found unguarded (markets/identity.py): a Prolific
submission of another study never vouches for this one, the platform's own credentials or rate
limit refused leaves the participant waiting (not refused), an answer for a session already
decided changes nothing, what a stored answer writes, whom a refusal links and excludes, which
sessions the sweep asks about again, and what the study page counts (against the market STAND-IN,
tests/markets/standin.py)."""

import threading
from datetime import timedelta
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import User
from django.db import DatabaseError, transaction
from django.db import connections as databases
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Market, Worker, WorkerExclusion
from crowd.holds import UNVOUCHED
from crowd.models import CodeHold, CodeHoldDecision, MarketCheck, Study, StudySession, WorkerLink
from markets import connections, identity

from .conftest import arrive, connect_mturk, connect_prolific, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def checks_in_this_process(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"


def waiting(study, standin, django_user_model, n=1, market=Market.PROLIFIC, prefix=""):
    """n sessions of workers known to the stand-in, each waiting for the market's word."""
    sessions = arrive(study, standin, django_user_model, n, market=market, completed=False, prefix=prefix)
    StudySession.objects.filter(pk__in=[s.pk for s in sessions]).update(market_check=MarketCheck.PENDING)
    return sessions


def checked(session):
    answer = identity.check_session(session.pk, patient=False)
    session.refresh_from_db()
    return answer, session


def test_a_prolific_submission_of_another_study_is_refused_not_vouched(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    standin.submissions[session.external_session_id]["study_id"] = "5fa00000000000000000other"

    answer, session = checked(session)

    assert session.market_check == MarketCheck.REFUSED
    assert "is of another study (5fa00000000000000000other)" in session.market_check_note
    assert session.market_participant_id == session.worker.external_id, "the owner is named"
    assert not answer.ask_again


def test_prolifics_older_field_names_are_read_for_the_study_and_the_owner(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    mine, foreign, unnamed = waiting(study, standin, django_user_model, 3)
    for session, named_study in ((mine, standin.study_id), (foreign, "5fa00000000000000000other")):
        row = standin.submissions[session.external_session_id]
        row.update(study_id="", study=named_study, participant=row.pop("participant_id"))

    assert checked(mine)[1].market_check == MarketCheck.VOUCHED
    assert checked(foreign)[1].market_check == MarketCheck.REFUSED
    standin.submissions[unnamed.external_session_id]["study_id"] = ""
    assert checked(unnamed)[1].market_check == MarketCheck.VOUCHED, "a submission naming no study"


def test_a_submission_naming_no_participant_is_refused_as_nobodys(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    standin.submissions[session.external_session_id]["participant_id"] = ""

    session = checked(session)[1]

    assert session.market_check == MarketCheck.REFUSED
    assert f"is participant (none)'s, not {session.worker.external_id}'s" in session.market_check_note


def test_the_platforms_own_prolific_token_refused_leaves_the_participant_waiting(standin, django_user_model):
    study = make_study()
    connections.save_connection(
        study, market="prolific", market_study_id=standin.study_id, token="not-the-workspace-token"
    )
    (session,) = waiting(study, standin, django_user_model)

    answer, session = checked(session)

    assert answer.ask_again and session.market_check == MarketCheck.PENDING
    assert "did not answer" in session.market_check_note
    assert not WorkerExclusion.objects.filter(worker=session.worker).exists(), "the participant did nothing"


def test_a_rate_limit_leaves_the_participant_waiting_and_a_bad_request_refuses(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    limited, invalid = waiting(study, standin, django_user_model, 2)
    standin.fail("submission.get", "429")
    answer, limited = checked(limited)
    assert answer.ask_again and limited.market_check == MarketCheck.PENDING

    standin.fail("submission.get", "400")
    answer, invalid = checked(invalid)
    assert not answer.ask_again and invalid.market_check == MarketCheck.REFUSED
    assert "Prolific has no submission" in invalid.market_check_note


def test_a_submission_id_prolific_would_not_take_is_refused_without_asking(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    StudySession.objects.filter(pk=session.pk).update(external_session_id="../users/me")
    asked = len(standin.requests)

    session = checked(session)[1]

    assert session.market_check == MarketCheck.REFUSED
    assert "is not a Prolific submission id" in session.market_check_note
    assert len(standin.requests) == asked


def test_mturk_refusing_the_hit_refuses_and_its_rate_limit_waits(standin, django_user_model):
    study = make_study(slug="mturk-study")
    connect_mturk(study, standin)
    refused, limited = waiting(study, standin, django_user_model, 2, market=Market.MTURK)
    standin.fail("ListAssignmentsForHIT", "400")
    answer, refused = checked(refused)
    assert refused.market_check == MarketCheck.REFUSED and not answer.ask_again
    assert "MTurk does not know HIT standin-hit-1" in refused.market_check_note

    standin.fail("ListAssignmentsForHIT", "429", times=20)  # past the client's own retries
    answer, limited = checked(limited)
    assert limited.market_check == MarketCheck.PENDING and answer.ask_again
    assert "MTurk did not answer" in limited.market_check_note


def test_an_mturk_assignment_not_yet_listed_waits_and_an_mturk_that_does_not_answer_waits(standin, django_user_model):
    study = make_study(slug="mturk-study")
    connect_mturk(study, standin)
    unlisted, slow = waiting(study, standin, django_user_model, 2, market=Market.MTURK)
    standin.assignments.pop(unlisted.external_session_id)
    answer, unlisted = checked(unlisted)
    assert unlisted.market_check == MarketCheck.PENDING and not answer.ask_again, "the sweep asks again"
    assert answer.note == "MTurk lists no submitted assignment mturk-submission-000 of HIT standin-hit-1 yet."

    standin.fail("ListAssignmentsForHIT", "slow-before", times=5)  # past the client's timeout
    answer, slow = checked(slow)
    assert slow.market_check == MarketCheck.PENDING and answer.ask_again
    assert "MTurk did not answer" in slow.market_check_note


def test_an_mturk_assignment_naming_no_worker_is_refused_as_nobodys(standin, django_user_model):
    study = make_study(slug="mturk-study")
    connect_mturk(study, standin)
    (session,) = waiting(study, standin, django_user_model, market=Market.MTURK)
    standin.assignments[session.external_session_id]["WorkerId"] = ""

    session = checked(session)[1]

    assert session.market_check == MarketCheck.REFUSED
    assert "is worker (none)'s" in session.market_check_note


def test_an_mturk_assignment_of_another_worker_names_that_worker(standin, django_user_model):
    study = make_study(slug="mturk-study")
    connect_mturk(study, standin)
    (session,) = waiting(study, standin, django_user_model, market=Market.MTURK)
    standin.assignments[session.external_session_id]["WorkerId"] = "OWNERWORKER"

    session = checked(session)[1]

    assert (session.market_check, session.market_participant_id) == (MarketCheck.REFUSED, "OWNERWORKER")
    assert session.market_check_note == (
        f"MTurk's assignment mturk-submission-000 is worker OWNERWORKER's, not {session.worker.external_id}'s."
    )


def test_a_late_answer_does_not_overwrite_a_decided_one_and_a_gone_session_is_no_error(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    assert checked(session)[1].market_check == MarketCheck.VOUCHED

    late = identity.MarketAnswer(MarketCheck.REFUSED, "late", "someone-else")
    identity.store_answer(session.pk, session.worker_id, late)
    identity.store_answer(session.pk + 1000, session.worker_id, late)

    session.refresh_from_db()
    assert (session.market_check, session.market_participant_id) == (MarketCheck.VOUCHED, session.worker.external_id)
    assert session.market_check_tries == 1
    assert identity.check_session(session.pk) is None, "a decided session is not asked again"


def test_a_stored_answer_writes_every_field_cut_to_its_column(standin, django_user_model):
    study = make_study()
    (session,) = waiting(study, standin, django_user_model)
    StudySession.objects.filter(pk=session.pk).update(market_check_tries=2)
    before = timezone.now()

    identity.store_answer(
        session.pk, session.worker_id, identity.MarketAnswer(MarketCheck.PENDING, "n" * 400, "p" * 200)
    )

    session.refresh_from_db()
    assert session.market_check == MarketCheck.PENDING
    assert session.market_check_note == "n" * 300
    assert session.market_participant_id == "p" * 128
    assert session.market_check_tries == 3
    assert session.market_checked_at is not None and session.market_checked_at >= before


def test_a_refusal_links_only_the_owner_on_the_same_market_and_excludes_in_the_studys_team(standin, django_user_model):
    study = make_study()
    (session,) = waiting(study, standin, django_user_model)
    elsewhere = Worker.objects.create(user=User.objects.create(username="mt"), market=Market.MTURK, external_id="owner")
    owner = Worker.objects.create(user=User.objects.create(username="pr"), market=Market.PROLIFIC, external_id="owner")

    why = "w" * 400
    identity.store_answer(session.pk, session.worker_id, identity.MarketAnswer(MarketCheck.REFUSED, why, "owner"))

    assert set(WorkerLink.objects.filter(worker=session.worker).values_list("linked", flat=True)) == {owner.pk}
    assert not WorkerLink.objects.filter(worker=elsewhere).exists()
    (exclusion,) = WorkerExclusion.objects.filter(worker=session.worker)
    assert exclusion.team_id == study.dataset.team_id
    assert AuditEntry.objects.filter(reason=f"{identity.UNVOUCHED_REFUSED}: {why}"[:300]).exists()
    assert not CodeHold.objects.filter(session=session).exists(), "an unfinished session's code is held at its end"


def test_a_refusal_after_a_researcher_decided_the_code_adds_no_hold(standin, django_user_model):
    study = make_study()
    (session,) = waiting(study, standin, django_user_model)
    StudySession.objects.filter(pk=session.pk).update(completed_at=timezone.now())
    CodeHold.objects.create(session=session, kind=UNVOUCHED, text="waited", decision=CodeHoldDecision.RELEASED)

    identity.store_answer(session.pk, session.worker_id, identity.MarketAnswer(MarketCheck.REFUSED, "why", ""))

    assert list(CodeHold.objects.filter(session=session).values_list("text", "decision")) == [
        ("waited", CodeHoldDecision.RELEASED)
    ]


def test_the_sweep_asks_about_the_waiting_sessions_of_the_last_week_in_order(standin, django_user_model):
    study = make_study()
    sessions = waiting(study, standin, django_user_model, 5)
    now = timezone.now()
    StudySession.objects.filter(pk=sessions[0].pk).update(started_at=now - timedelta(days=8))
    StudySession.objects.filter(pk=sessions[1].pk).update(started_at=now - timedelta(days=6, hours=23))
    StudySession.objects.filter(pk=sessions[2].pk).update(is_preview=True)
    StudySession.objects.filter(pk=sessions[3].pk).update(market_check=MarketCheck.VOUCHED)

    assert identity.pending_sessions() == [sessions[1].pk, sessions[4].pk]
    assert identity.pending_sessions(now + timedelta(days=2)) == [sessions[4].pk], "its own `now`"


def test_the_sweep_asks_about_500_sessions_at_a_time(standin, django_user_model):
    study = make_study()
    (first,) = waiting(study, standin, django_user_model)
    StudySession.objects.bulk_create(
        StudySession(study=study, worker=first.worker, external_session_id=f"s-{i}", market_check=MarketCheck.PENDING)
        for i in range(500)
    )

    asked = identity.pending_sessions()

    assert len(asked) == 500 and asked[0] == first.pk


def test_an_arrival_waits_for_its_market_and_a_preview_or_an_unconnected_one_does_not(
    standin, django_user_model, django_capture_on_commit_callbacks
):
    study = make_study()
    plain = make_study(slug="plain")
    connect_prolific(study, standin)
    # The unconnected study's first: the stand-in keeps the later submission of the same id.
    (unconnected,) = arrive(plain, standin, django_user_model, 1, completed=False, prefix="plain-")
    arrived, preview = arrive(study, standin, django_user_model, 2, completed=False)
    StudySession.objects.filter(pk=preview.pk).update(is_preview=True)
    preview.is_preview = True

    with django_capture_on_commit_callbacks(execute=True):
        for session in (arrived, preview, unconnected):
            identity.check_on_arrival(StudySession, session=session)

    for session in (arrived, preview, unconnected):
        session.refresh_from_db()
    assert arrived.market_check == MarketCheck.VOUCHED, "asked at once, after the commit"
    assert (preview.market_check, unconnected.market_check) == (MarketCheck.UNCHECKED, MarketCheck.UNCHECKED)


def test_an_mturk_arrival_is_asked_by_the_task(standin, django_user_model, django_capture_on_commit_callbacks):
    study = make_study(slug="mturk-study")
    connect_mturk(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1, market=Market.MTURK, completed=False)

    with django_capture_on_commit_callbacks(execute=True):
        identity.check_on_arrival(StudySession, session=session)

    session.refresh_from_db()
    assert session.market_check == MarketCheck.VOUCHED
    assert session.market_check_note == "MTurk's assignment mturk-submission-000 is this worker's."
    assert session.market_participant_id == session.worker.external_id
    assert ("MTURK", "ListAssignmentsForHIT") in standin.requests


def test_an_arrival_the_market_cannot_answer_at_once_is_asked_again_by_the_task(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    standin.fail("submission.get", "500")  # the check at arrival; the task's ask is answered

    answer = identity.check_at_arrival(session.pk)

    assert answer is not None and answer.state == MarketCheck.PENDING
    session.refresh_from_db()
    assert session.market_check == MarketCheck.VOUCHED and session.market_check_tries == 2


def test_the_check_at_arrival_waits_only_the_arrivals_time(standin, django_user_model, settings):
    settings.MARKET_ARRIVAL_TIMEOUT_SECONDS = 0.5
    settings.MARKET_TIMEOUT_SECONDS = 5.0
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    standin.fail("submission.get", "slow-after", times=3)  # answers in 2.5 s: past the arrival's wait

    answer = identity.check_at_arrival(session.pk)

    assert answer is not None and answer.state == MarketCheck.PENDING and answer.ask_again


def test_the_check_at_arrival_never_waits_out_a_rate_limit_and_skips_a_decided_session(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    standin.fail("submission.get", "429")  # Retry-After 0: a patient client would ask again at once

    answer = identity.check_at_arrival(session.pk)

    assert answer is not None and answer.state == MarketCheck.PENDING
    session.refresh_from_db()
    assert session.market_check == MarketCheck.VOUCHED, "the task asked again"
    assert identity.check_at_arrival(session.pk) is None


@pytest.mark.django_db(transaction=True)
def test_an_arrival_check_that_meets_a_lock_is_left_to_the_task(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    locked, done = threading.Event(), threading.Event()

    def participants_other_request() -> None:
        with transaction.atomic():
            Worker.objects.select_for_update().get(pk=session.worker_id)
            locked.set()
            done.wait(30)
        databases.close_all()

    holder = threading.Thread(target=participants_other_request)
    holder.start()
    locked.wait(30)
    with databases["default"].cursor() as cursor:
        cursor.execute("SET lock_timeout = '300ms'")
    try:
        answer = identity.check_at_arrival(session.pk)
    finally:
        with databases["default"].cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")
        done.set()
        holder.join()

    assert answer is None, "nothing was stored"
    asked = [r for r in standin.requests if r == ("GET", f"/api/v1/submissions/{session.external_session_id}/")]
    assert len(asked) == 2, "the task asked the market again"
    session.refresh_from_db()
    assert session.market_check == MarketCheck.PENDING


def test_only_a_connected_study_confirms_each_participant(standin):
    study, plain = make_study(), make_study(slug="plain")
    connect_prolific(study, standin)
    assert identity.confirms_each_participant(study) is True
    assert identity.confirms_each_participant(plain) is False


def test_the_study_page_counts_each_check_and_lists_the_latest_refusals_first(
    standin, django_user_model, django_assert_num_queries
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 25, completed=False)
    now = timezone.now()
    for i, session in enumerate(sessions[:22]):
        StudySession.objects.filter(pk=session.pk).update(
            market_check=MarketCheck.REFUSED, market_checked_at=now - timedelta(minutes=i)
        )
    StudySession.objects.filter(pk=sessions[22].pk).update(market_check=MarketCheck.VOUCHED)
    StudySession.objects.filter(pk=sessions[23].pk).update(market_check=MarketCheck.PENDING)
    StudySession.objects.filter(pk=sessions[24].pk).update(market_check=MarketCheck.REFUSED, is_preview=True)
    (other,) = arrive(make_study(slug="other"), standin, django_user_model, 1, completed=False, prefix="o-")
    StudySession.objects.filter(pk=other.pk).update(market_check=MarketCheck.REFUSED)

    # Read as the study page reads it, with its connection (`connections.connection_of`).
    study = Study.objects.select_related("market_connection").get(pk=study.pk)
    with django_assert_num_queries(2):
        checks = identity.arrival_checks(study)
        assert all(s.worker.external_id for s in checks.refused), "their workers read with them"

    assert checks.market == "Prolific"
    assert checks.counts == {
        MarketCheck.UNCHECKED: 0,
        MarketCheck.PENDING: 1,
        MarketCheck.VOUCHED: 1,
        MarketCheck.REFUSED: 22,
    }
    assert [s.pk for s in checks.refused] == [s.pk for s in sessions[:20]]
    assert identity.arrival_checks(make_study(slug="plain")).market == ""


def test_mturk_refusing_the_platforms_own_credentials_leaves_the_worker_waiting_not_excluded(
    standin, django_user_model
):
    """AWS answers a key it does not know with a 400, as it answers a bad request: the refusal is
    of the platform, and the worker is neither refused nor excluded."""
    study = make_study(slug="mturk-study")
    connections.save_connection(
        study,
        market="mturk",
        hit_type_id="3STANDINHITTYPE000000000000001",
        access_key_id="AKIASTANDINWRONGKEY1",
        secret_access_key="standin-secret",
    )
    (session,) = waiting(study, standin, django_user_model, market=Market.MTURK)

    answer, session = checked(session)

    assert session.market_check == MarketCheck.PENDING and answer.ask_again, session.market_check_note
    assert "UnrecognizedClientException" in session.market_check_note
    assert not WorkerExclusion.objects.filter(worker=session.worker).exists()


# --- ask_market, check_session, store_answer: the edges found unguarded in a later round ----------


def test_credentials_the_key_no_longer_opens_leave_the_participant_waiting_to_be_asked_again(
    standin: Any, django_user_model: Any, settings: Any
) -> None:
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()  # the server's key was changed
    asked = len(standin.requests)

    answer, session = checked(session)

    assert answer.state == MarketCheck.PENDING and answer.ask_again is True and answer.participant_id == ""
    assert answer.note.startswith("The connection's credentials cannot be read: The stored credentials cannot be")
    assert (session.market_check, session.market_check_note) == (MarketCheck.PENDING, answer.note)
    assert len(standin.requests) == asked, "the market is not asked without its credentials"
    assert not WorkerExclusion.objects.filter(worker=session.worker).exists(), "the participant did nothing"


def test_a_waiting_session_of_a_study_without_a_connection_is_answered_unchecked(
    standin: Any, django_user_model: Any
) -> None:
    study = make_study()
    (session,) = waiting(study, standin, django_user_model)

    answer, session = checked(session)

    assert answer == identity.MarketAnswer(
        MarketCheck.UNCHECKED, "The study has no market connection: its ids are unchecked."
    )
    assert (session.market_check, session.market_check_note) == (MarketCheck.UNCHECKED, answer.note)
    assert standin.requests == [], "no market was asked"


def test_the_tasks_check_waits_out_a_rate_limit_and_vouches(standin: Any, django_user_model: Any) -> None:
    """The Celery task and the sweep call check_session as it stands: patient, unlike the arrival."""
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    standin.fail("submission.get", "429")  # Retry-After 0: a patient client asks again at once

    answer = identity.check_session(session.pk)

    assert answer is not None and answer.state == MarketCheck.VOUCHED and not answer.ask_again
    session.refresh_from_db()
    assert (session.market_check, session.market_check_tries) == (MarketCheck.VOUCHED, 1)
    asked = [r for r in standin.requests if r == ("GET", f"/api/v1/submissions/{session.external_session_id}/")]
    assert len(asked) == 2, "asked again after the rate limit, in the same check"


def test_a_researchers_preview_left_waiting_is_never_asked_about(standin: Any, django_user_model: Any) -> None:
    study = make_study()
    connect_prolific(study, standin)
    (session,) = waiting(study, standin, django_user_model)
    StudySession.objects.filter(pk=session.pk).update(is_preview=True)
    asked = len(standin.requests)

    assert identity.check_session(session.pk) is None

    session.refresh_from_db()
    assert (session.market_check, session.market_check_tries) == (MarketCheck.PENDING, 0)
    assert len(standin.requests) == asked


@pytest.mark.django_db(transaction=True)
def test_a_row_written_for_the_worker_meanwhile_does_not_hold_up_the_markets_answer(
    standin: Any, django_user_model: Any
) -> None:
    """The answer locks the worker's row FOR NO KEY UPDATE and only the session's row beside it:
    the participant's own request inserting a row that refers to the worker (a label, a bonus:
    PostgreSQL's foreign-key check takes FOR KEY SHARE on the worker's row) does not block it."""
    study = make_study()
    (session,) = waiting(study, standin, django_user_model)
    locked, done = threading.Event(), threading.Event()

    def participants_other_request() -> None:
        with transaction.atomic(), databases["default"].cursor() as cursor:
            for model, pk in ((Worker, session.worker_id), (Study, study.pk)):
                cursor.execute(f"SELECT 1 FROM {model._meta.db_table} WHERE id = %s FOR KEY SHARE", [pk])
            locked.set()
            done.wait(30)
        databases.close_all()

    holder = threading.Thread(target=participants_other_request)
    holder.start()
    locked.wait(30)
    with databases["default"].cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")
    stored: DatabaseError | None = None
    try:
        identity.store_answer(
            session.pk, session.worker_id, identity.MarketAnswer(MarketCheck.VOUCHED, "vouched", "someone")
        )
    except DatabaseError as error:
        stored = error
    finally:
        with databases["default"].cursor() as cursor:
            cursor.execute("SET lock_timeout = 0")
        done.set()
        holder.join()

    assert stored is None, f"the answer waited on the participant's request: {stored}"
    session.refresh_from_db()
    assert (session.market_check, session.market_participant_id) == (MarketCheck.VOUCHED, "someone")
