"""Events from the markets: Prolific's signed webhooks (forged and replayed ones refused) end a
returned visit and free its claims at once; MTurk is polled (against the market STAND-IN)."""

import json
import time

import pytest
from django.test import Client
from django.urls import reverse

from corpus.models import Market
from crowd.arrival import SESSION_KEY
from crowd.models import ClaimStatus
from markets import events, tasks
from markets.models import WebhookDelivery
from tests.validation.validation_factories import make_pair
from validation.batch_claims import claim_validation_batch
from validation.models import ValidationClaim

from .conftest import arrive, connect_mturk, connect_prolific, make_study

pytestmark = pytest.mark.django_db

SECRET = "standin-webhook-secret"


def post_hook(connection, event, *, secret=SECRET, timestamp=None, signature=None, client=None):
    body = json.dumps(event).encode()
    timestamp = str(int(time.time())) if timestamp is None else timestamp
    signature = events.prolific_signature(secret, timestamp, body) if signature is None else signature
    return (client or Client()).post(
        f"/markets/hooks/prolific/{connection.webhook_key}/",
        data=body,
        content_type="application/json",
        HTTP_X_PROLIFIC_REQUEST_TIMESTAMP=timestamp,
        HTTP_X_PROLIFIC_REQUEST_SIGNATURE=signature,
    )


def returned(session, status="RETURNED"):
    return {
        "resource_id": session.external_session_id,
        "event_type": "submission.status.change",
        "participant_id": session.worker.external_id,
        "status": status,
    }


def full_pairs(study, sessions):
    """Five pairs whose every validation place is held by the sessions' workers (four of them)."""
    for _ in range(5):
        make_pair(study.dataset)
    for session in sessions:
        assert claim_validation_batch(session.worker, study_session=session) is not None


def test_a_returned_submission_frees_its_claims_at_once_and_ends_the_visit(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    holders = arrive(study, standin, django_user_model, 4, completed=False)
    latecomer = arrive(make_study("other-study"), standin, django_user_model, 1, completed=False, prefix="late-")[0]
    full_pairs(study, holders)
    assert claim_validation_batch(latecomer.worker, dataset=study.dataset) is None, "every place is held"

    answer = post_hook(connection, returned(holders[0]))

    assert answer.status_code == 200, answer.content
    assert not ValidationClaim.objects.filter(worker=holders[0].worker, status=ClaimStatus.OPEN).exists()
    assert ValidationClaim.objects.filter(worker=holders[0].worker, status=ClaimStatus.RELEASED).count() == 5
    # Right after the webhook, another validator gets the freed places.
    assert claim_validation_batch(latecomer.worker, dataset=study.dataset) is not None
    holders[0].refresh_from_db()
    assert holders[0].closed_at is not None and holders[0].ended_as == "returned"
    assert holders[0].closed_reason == "returned on Prolific"
    # The others keep theirs.
    assert ValidationClaim.objects.filter(worker=holders[1].worker, status=ClaimStatus.OPEN).count() == 5


def test_timed_out_and_rejected_submissions_end_their_visits_too(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    first, second = arrive(study, standin, django_user_model, 2, completed=False)
    assert post_hook(connection, returned(first, "TIMED-OUT")).status_code == 200
    assert post_hook(connection, returned(second, "REJECTED")).status_code == 200
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.ended_as, first.closed_reason) == ("timed_out", "timed out on Prolific")
    assert (second.ended_as, second.closed_reason) == ("rejected", "rejected on Prolific")


def test_a_forged_webhook_is_refused_and_changes_nothing(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    session = arrive(study, standin, django_user_model, 1, completed=False)[0]

    forged = post_hook(connection, returned(session), secret="a-guessed-secret")
    unsigned = post_hook(connection, returned(session), signature="")
    wrong_place = Client().post("/markets/hooks/prolific/not-a-key/", data=b"{}", content_type="application/json")

    assert (forged.status_code, unsigned.status_code, wrong_place.status_code) == (403, 403, 404)
    session.refresh_from_db()
    assert session.closed_at is None
    assert not WebhookDelivery.objects.exists()


def test_a_replayed_webhook_is_refused(standin, django_user_model, settings):
    study = make_study()
    connection = connect_prolific(study, standin)
    session = arrive(study, standin, django_user_model, 1, completed=False)[0]
    event = returned(session)
    timestamp = str(int(time.time()))

    assert post_hook(connection, event, timestamp=timestamp).status_code == 200
    again = post_hook(connection, event, timestamp=timestamp)
    stale_stamp = str(int(time.time()) - settings.MARKET_WEBHOOK_TOLERANCE_SECONDS - 60)
    stale = post_hook(connection, event, timestamp=stale_stamp)

    assert (again.status_code, stale.status_code) == (409, 403)
    assert WebhookDelivery.objects.count() == 1


def test_mturk_polling_closes_rejected_assignments(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    kept, rejected = arrive(study, standin, django_user_model, 2, market=Market.MTURK, completed=False)
    standin.assignments[rejected.external_session_id]["AssignmentStatus"] = "Rejected"

    done = tasks.poll_mturk_assignments()

    assert done and "1 session(s) closed" in done[0]
    rejected.refresh_from_db()
    kept.refresh_from_db()
    assert rejected.closed_at is not None and kept.closed_at is None


def test_the_participant_of_a_returned_submission_gets_no_more_tasks(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    for _ in range(5):
        make_pair(study.dataset)
    session = arrive(study, standin, django_user_model, 1, completed=False)[0]
    browser = Client()
    browser.force_login(session.worker.user)
    stored = browser.session
    stored[SESSION_KEY] = session.pk
    stored.save()
    assert browser.get(reverse("validation:next")).status_code in (200, 302)

    assert post_hook(connection, returned(session)).status_code == 200

    refused = browser.get(reverse("validation:next"))
    assert refused.status_code == 403
    assert "This visit has ended" in refused.content.decode()
    assert not ValidationClaim.objects.filter(worker=session.worker, status=ClaimStatus.OPEN).exists()
