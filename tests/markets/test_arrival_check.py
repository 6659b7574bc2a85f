"""A Prolific arrival is checked while the participant waits for their first task.

The attack: a made-up SESSION_ID under a second participant id was checked after the arrival by
the Celery task, so the id was shown a batch of pairs (the writer's own, in
bench/attacks/self_validation_second_id.py) before the market's refusal arrived. Now the market is
asked in the arrival request itself, at most MARKET_ARRIVAL_TIMEOUT_SECONDS and never waiting out
a rate limit: a made-up id is refused before any task is shown, and a market that does not answer
in time leaves the session waiting (its code held, its labels out of gold) for the task.
"""

import pytest
from django.test import Client
from django.urls import reverse

from crowd.models import MarketCheck, StudySession
from markets.models import MarketCall
from tests.validation.validation_factories import make_pair
from validation.models import ValidationClaim

from .conftest import connect_prolific, make_study


def arrive(client, study, pid, session_id, study_id):
    return client.get(
        reverse("study_entry", args=[study.slug]),
        {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session_id},
    )


@pytest.mark.django_db(transaction=True)
def test_a_made_up_session_id_is_refused_before_the_first_task_is_shown(standin, settings, make_worker):
    # Tasks queued from here would run in a thread of their own, after the request: whatever the
    # request decided, it decided in itself.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "background"
    study = make_study()
    connect_prolific(study, standin)
    make_pair(study.dataset, author=make_worker())
    browser = Client()
    response = arrive(browser, study, "made-up-pid", "5f00000000000000000000d1", standin.study_id)
    session = StudySession.objects.get(worker__external_id="made-up-pid")
    assert session.market_check == MarketCheck.REFUSED
    assert session.market_check_tries == 1
    assert ("GET", "/api/v1/submissions/5f00000000000000000000d1/") in standin.requests
    page = browser.get(response["Location"], follow=True).content.decode()
    assert "not taking part in validation" in page
    assert not ValidationClaim.objects.filter(worker=session.worker).exists()


@pytest.mark.django_db
def test_a_market_slow_at_arrival_leaves_the_session_waiting(standin, settings, django_capture_on_commit_callbacks):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    settings.MARKET_ARRIVAL_TIMEOUT_SECONDS = 0.5
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f00000000000000000000d2", "slow-pid")
    standin.fail("submission.get", "slow-before")  # at arrival: no answer in time
    standin.fail("submission.get", "500")  # the task's first try
    with django_capture_on_commit_callbacks(execute=True):
        response = arrive(Client(), study, "slow-pid", "5f00000000000000000000d2", standin.study_id)
    assert response.status_code == 302
    session = StudySession.objects.get(worker__external_id="slow-pid")
    assert session.market_check == MarketCheck.PENDING
    assert session.labels_await_market
    assert MarketCall.objects.filter(action="submission.get", error__contains="within 0.5 s").exists()
    assert session.market_check_tries == 2  # at arrival, then the task


@pytest.mark.django_db
def test_a_rate_limit_at_arrival_is_not_waited_out(standin, settings, django_capture_on_commit_callbacks):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    study = make_study()
    connect_prolific(study, standin)
    standin.add_submission("5f00000000000000000000d3", "busy-pid")
    standin.fail("submission.get", "429", times=2)  # at arrival (not retried), then the task's try
    standin.fail("submission.get", "500")  # the task's retry after the 429
    with django_capture_on_commit_callbacks(execute=True):
        arrive(Client(), study, "busy-pid", "5f00000000000000000000d3", standin.study_id)
    session = StudySession.objects.get(worker__external_id="busy-pid")
    assert session.market_check == MarketCheck.PENDING
    asked = [request for request in standin.requests if request == ("fault?", "submission.get")]
    assert len(asked) == 3  # one at arrival, two by the patient task
