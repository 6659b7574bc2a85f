"""An approval the market never refused stays in the queue: pressed during a
network failure, a 5xx or a rate limit, it is sent again by the next press or the beat; only the
market's own refusal (a 4xx) marks it refused (against the market STAND-IN)."""

import pytest

from markets import reviews, tasks
from markets.models import ReviewState, SessionReview

from .conftest import arrive, connect_prolific, make_study

pytestmark = pytest.mark.django_db


def test_an_approval_pressed_during_a_network_failure_stays_queued_and_the_beat_sends_it(
    standin, django_user_model, settings
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9/api/v1/"  # nothing listens there: no connection

    outcome = reviews.approve_sessions(study)

    assert (outcome.confirmed, outcome.failed, outcome.unanswered) == (0, 0, 2)
    queued = SessionReview.objects.select_related("call")
    assert [r.state for r in queued] == [ReviewState.SENT] * 2
    assert all(r.call is not None and "could not be reached" in r.call.error for r in queued), "the queue says why"
    settings.PROLIFIC_API_URL = f"{standin.url}/api/v1/"
    tasks.approve_checked_sessions()

    assert [r.state for r in SessionReview.objects.all()] == [ReviewState.CONFIRMED] * 2
    assert {standin.submissions[s.external_session_id]["status"] for s in sessions} == {"APPROVED"}


def test_an_approval_that_met_a_5xx_is_sent_again_by_the_next_press(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    arrive(study, standin, django_user_model, 1)
    standin.fail("approve", "500")

    first = reviews.approve_sessions(study)
    second = reviews.approve_sessions(study)

    assert (first.unanswered, first.failed) == (1, 0)
    assert second.confirmed == 1
    assert SessionReview.objects.get().state == ReviewState.CONFIRMED


def test_an_approval_the_market_refuses_is_marked_refused(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    standin.submissions.pop(session.external_session_id)  # Prolific does not know the participant: 400

    outcome = reviews.approve_sessions(study)

    assert outcome.failed == 1
    assert SessionReview.objects.get().state == ReviewState.FAILED
