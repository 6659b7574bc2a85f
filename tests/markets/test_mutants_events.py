"""What the market tells us (markets/events.py), at the edges mutmut found unguarded: which webhooks
are refused and in which words, what a delivery records, that a visit is ended once and by its own
study's events only, and what MTurk's polling confirms and says (against the market STAND-IN)."""

import json
import time

import pytest
from cryptography.fernet import Fernet

from corpus.models import Market
from crowd.models import SessionEnding, StudySession
from markets import connections, events, reviews
from markets.events import WebhookRefused
from markets.models import ReviewState, SessionReview, WebhookDelivery

from .conftest import arrive, connect_mturk, connect_prolific, make_study
from .test_events import SECRET

pytestmark = pytest.mark.django_db


def deliver(connection, event, *, timestamp=None, signature=None, secret=SECRET):
    """The webhook as the view hands it over: raw body, timestamp and signature headers."""
    body = event if isinstance(event, bytes) else json.dumps(event).encode()
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    signature = events.prolific_signature(secret, timestamp, body) if signature is None else signature
    return events.receive_prolific_webhook(connection.webhook_key, body, timestamp, signature)


def refusal(connection, event, **headers) -> tuple[int, str]:
    with pytest.raises(WebhookRefused) as refused:
        deliver(connection, event, **headers)
    return refused.value.status, str(refused.value)


def status_change(session, status):
    return {"event_type": "submission.status.change", "resource_id": session.external_session_id, "status": status}


# --- refused webhooks ------------------------------------------------------------------------


def test_an_mturk_connections_address_is_no_prolific_webhook_address(standin):
    mturk = connect_mturk(make_study(), standin)

    assert refusal(mturk, {"event_type": "x"}) == (404, "Unknown webhook address.")


def test_a_connection_whose_secret_cannot_be_read_or_has_none_refuses_in_words(standin, settings):
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()
    sealed = connect_prolific(make_study(), standin)
    unsigned = connections.save_connection(
        make_study("no-secret"), market="prolific", market_study_id=standin.study_id, token=standin.prolific_token
    )
    assert refusal(unsigned, {"event_type": "x"}) == (403, "No webhook secret is set for this connection.")

    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()  # the key was changed

    assert refusal(sealed, {"event_type": "x"}) == (503, "The webhook secret cannot be read.")


def test_a_webhook_missing_either_header_is_refused_before_its_body_is_read(standin):
    connection = connect_prolific(make_study(), standin)

    assert refusal(connection, b"not json", timestamp="") == (403, "Missing signature or timestamp.")
    assert refusal(connection, b"not json", signature="") == (403, "Missing signature or timestamp.")
    assert not WebhookDelivery.objects.exists()


def test_a_timestamp_of_twelve_digits_is_heard_and_one_of_thirteen_refused(standin):
    connection = connect_prolific(make_study(), standin)
    now = str(int(time.time()))

    assert deliver(connection, {"event_type": "x"}, timestamp=now.zfill(12)) == "nothing to do"
    assert refusal(connection, {"event_type": "y"}, timestamp=now.zfill(13)) == (
        400,
        "The timestamp must be a Unix time in whole seconds (ASCII digits only).",
    )


def test_a_timestamp_a_day_away_is_refused_naming_it(standin):
    connection = connect_prolific(make_study(), standin)
    for timestamp in (str(int(time.time()) - 86_500), str(int(time.time()) + 86_500)):
        assert refusal(connection, {"event_type": "x"}, timestamp=timestamp) == (
            400,
            f"The timestamp {timestamp} is out of range: more than a day from the server's clock.",
        )


def test_a_stale_or_badly_signed_webhook_is_refused_in_words(standin, settings):
    connection = connect_prolific(make_study(), standin)
    stale = str(int(time.time()) - settings.MARKET_WEBHOOK_TOLERANCE_SECONDS - 60)

    assert refusal(connection, {"event_type": "x"}, secret="guessed") == (403, "Bad signature.")
    assert refusal(connection, {"event_type": "x"}, timestamp=stale) == (
        403,
        "Stale timestamp: refused as a possible replay.",
    )


def test_a_signature_that_no_encoding_can_take_is_a_bad_signature_not_an_error(standin):
    connection = connect_prolific(make_study(), standin)

    # A lone surrogate is no character any header spells: compared byte for byte, it matches nothing.
    assert refusal(connection, {"event_type": "x"}, signature="\ud800" * 44) == (403, "Bad signature.")


def test_a_body_that_is_no_json_object_is_a_400_and_stores_nothing(standin):
    connection = connect_prolific(make_study(), standin)

    assert refusal(connection, b"{not json") == (400, "The body is not JSON.")
    assert refusal(connection, b"[" * 100_000 + b"]" * 100_000) == (400, "The body is not JSON.")
    assert refusal(connection, b'["submission.status.change"]') == (400, "The body is not a JSON object.")
    assert not WebhookDelivery.objects.exists()


def test_a_replay_is_refused_in_words(standin):
    connection = connect_prolific(make_study(), standin)
    timestamp = str(int(time.time()))
    deliver(connection, {"event_type": "x"}, timestamp=timestamp)

    assert refusal(connection, {"event_type": "x"}, timestamp=timestamp) == (
        409,
        "Replayed webhook: already received.",
    )


# --- what a delivery records -----------------------------------------------------------------


def test_a_delivery_records_the_event_cut_to_its_columns_and_the_outcome(standin):
    connection = connect_prolific(make_study(), standin)
    timestamp = str(int(time.time()))
    event = {"event_type": "e" * 100, "resource_id": "r" * 200, "status": "returned" + "s" * 100}

    outcome = deliver(connection, event, timestamp=timestamp)

    delivery = WebhookDelivery.objects.get()
    assert outcome == delivery.outcome == "nothing to do"
    assert (delivery.event_type, delivery.resource_id) == ("e" * 60, "r" * 128)
    assert delivery.status == ("RETURNED" + "S" * 100)[:40]
    assert int(delivery.sent_at.timestamp()) == int(timestamp) and delivery.connection == connection
    # An event naming none of them is recorded with none.
    assert deliver(connection, {}) == "nothing to do"
    empty = WebhookDelivery.objects.exclude(pk=delivery.pk).get()
    assert (empty.event_type, empty.resource_id, empty.status) == ("", "", "")


def test_a_submission_event_naming_no_session_of_this_study_says_so_within_the_outcomes_column(
    standin, django_user_model
):
    study = make_study()
    connection = connect_prolific(study, standin)
    other = make_study("other-study")
    (elsewhere,) = arrive(other, standin, django_user_model, 1, completed=False)

    # The other study's submission: matched by the submission within this study only.
    outcome = deliver(connection, status_change(elsewhere, "RETURNED"))
    long_id = "x" * 400
    long_outcome = deliver(connection, {"event_type": "submission.status.change", "resource_id": long_id})

    assert outcome == f"No session of this study for submission {elsewhere.external_session_id}."
    assert long_outcome == f"No session of this study for submission {long_id}"[:300]
    elsewhere.refresh_from_db()
    assert elsewhere.closed_at is None


# --- a visit ended once, by its own study's events -------------------------------------------


def test_a_returned_visit_is_ended_once_and_a_later_event_keeps_its_ending(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1, completed=False)

    first = deliver(connection, status_change(session, "returned"))
    session.refresh_from_db()
    ended_at = session.closed_at
    later = deliver(connection, status_change(session, "REJECTED"))

    assert first == f"Session {session.pk} returned on Prolific: closed, 0 claim(s) released."
    assert later == f"Session {session.pk} rejected on Prolific: closed, 0 claim(s) released."
    session.refresh_from_db()
    assert (session.closed_at, session.ended_as, session.closed_reason) == (
        ended_at,
        "returned",
        "returned on Prolific",
    )


def test_a_submission_event_without_a_status_or_a_submission_is_noted_as_such(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1, completed=False)
    no_status = {"event_type": "submission.status.change", "resource_id": session.external_session_id}

    assert deliver(connection, no_status) == f"Session {session.pk}: status  noted."
    assert deliver(connection, {"event_type": "submission.status.change"}) == (
        "No session of this study for submission ."
    )
    session.refresh_from_db()
    assert session.closed_at is None


def test_an_approved_event_confirms_the_queued_approval_only(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    approved, rejected, not_yet = arrive(study, standin, django_user_model, 3)
    standin.fail("approve", "500")
    standin.fail("reject", "500")
    assert reviews.approve_sessions(study, [approved.pk, not_yet.pk]).unanswered == 2
    assert reviews.reject_session(rejected, "No answers given.").unanswered == 1

    assert deliver(connection, status_change(approved, "approved")) == f"Session {approved.pk} approved on Prolific."
    assert deliver(connection, status_change(rejected, "APPROVED")) == f"Session {rejected.pk} approved on Prolific."
    assert deliver(connection, status_change(approved, "awaiting review")) == (
        f"Session {approved.pk}: status AWAITING REVIEW noted."
    )

    states = {r.study_session_id: r.state for r in SessionReview.objects.all()}
    assert states == {approved.pk: ReviewState.CONFIRMED, rejected.pk: ReviewState.SENT, not_yet.pk: ReviewState.SENT}
    assert not StudySession.objects.filter(closed_at__isnull=False).exists()


# --- MTurk's polling -------------------------------------------------------------------------


def test_mturk_polling_confirms_approvals_closes_rejections_and_says_how_many(standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    approved, also_approved, rejected, queued_rejection, waiting, ended, other_hit = arrive(
        study, standin, django_user_model, 7, market=Market.MTURK, completed=False
    )
    standin.fail("ApproveAssignment", "500", times=2)
    standin.fail("RejectAssignment", "500")
    for session in (approved, also_approved, queued_rejection):
        session.completed_at = session.started_at
        session.save(update_fields=["completed_at"])
    assert reviews.approve_sessions(study, [approved.pk, also_approved.pk]).unanswered == 2
    assert reviews.reject_session(queued_rejection, "No work done.").unanswered == 1
    ended.closed_at = ended.started_at
    ended.ended_as, ended.closed_reason = SessionEnding.RETURNED, "returned"
    ended.save(update_fields=["closed_at", "ended_as", "closed_reason"])
    for session in (approved, also_approved, queued_rejection):
        standin.assignments[session.external_session_id]["AssignmentStatus"] = "Approved"
    for session in (rejected, ended, waiting, other_hit):
        standin.assignments[session.external_session_id]["AssignmentStatus"] = "Rejected"
    # A second HIT, and a session that came from no HIT (not MTurk's to poll).
    StudySession.objects.filter(pk=other_hit.pk).update(external_study_id="standin-hit-2")
    standin.assignments[other_hit.external_session_id]["HITId"] = "standin-hit-2"
    StudySession.objects.filter(pk=waiting.pk).update(external_study_id="")
    # Another study's session on the same HIT: its own connection polls it.
    other = connect_mturk(make_study("other-study"), standin)
    (elsewhere,) = arrive(other.study, standin, django_user_model, 1, market=Market.MTURK, completed=False, prefix="o-")
    StudySession.objects.filter(pk=elsewhere.pk).update(external_session_id="elsewhere-assignment")
    standin.add_assignment("elsewhere-assignment", elsewhere.worker.external_id, "standin-hit-1", "Rejected")
    standin.add_assignment(approved.external_session_id, approved.worker.external_id, "standin-hit-1", "Approved")

    line = events.poll_mturk(connection)

    assert line == "Polled 2 HIT(s): 2 session(s) closed, 2 approval(s) confirmed."
    states = {r.study_session_id: r.state for r in SessionReview.objects.all()}
    assert states == {
        approved.pk: ReviewState.CONFIRMED,
        also_approved.pk: ReviewState.CONFIRMED,
        queued_rejection.pk: ReviewState.SENT,
    }
    closed = dict(StudySession.objects.filter(closed_at__isnull=False).values_list("pk", "closed_reason"))
    assert closed == {rejected.pk: "rejected on MTurk", other_hit.pk: "rejected on MTurk", ended.pk: "returned"}


def test_mturk_polling_with_nothing_open_asks_nothing_and_a_failure_stops_it_in_words(standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    assert events.poll_mturk(connection) == "No open MTurk sessions."
    assert standin.requests == []
    arrive(study, standin, django_user_model, 1, market=Market.MTURK, completed=False)
    standin.fail("ListAssignmentsForHIT", "400")

    line = events.poll_mturk(connection)

    assert line.startswith("Polling stopped: ") and "BonusAmount is out of bounds." in line
