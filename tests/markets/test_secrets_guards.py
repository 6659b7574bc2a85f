"""The market's secrets held to their recipes: Prolific's webhook signature
checked against known answers computed outside the code under test (the documented recipe:
base64 of HMAC-SHA256, keyed with the secret, over the X-Prolific-Request-Timestamp value followed
by the body), future timestamps refused, and the sealed credentials' key rotation."""

import base64
import hashlib
import hmac
import json
import time

import pytest
from cryptography.fernet import Fernet
from django.test import Client

from markets import connections, events, payments
from markets.models import BonusPayment, MarketCall, WebhookDelivery
from markets.sealing import SealingUnavailable, seal, unseal, unseal_text

from .conftest import arrive, connect_prolific, make_study, owe_bonuses

pytestmark = pytest.mark.django_db

SECRET = "standin-webhook-secret"
# Computed with openssl, not with the code under test:
#   printf '%s' "$TIMESTAMP$BODY" | openssl dgst -sha256 -hmac "$SECRET" -binary | base64
VECTOR_TIMESTAMP = "1767225600"
VECTOR_BODY = b'{"event_type":"submission.status.change","resource_id":"sub-1","status":"RETURNED"}'
VECTOR_SIGNATURE = "mEbnl6e1Q1ykQ6RvdL1iwTiTh2kIYLhwD2SASIs11gE="
# The same body signed without the timestamp (a recipe that leaves it out): must not match.
VECTOR_BODY_ONLY_SIGNATURE = "I++mBkIU9w7dFo57X/NpsND43GNrrygkhz16lIQ9g1s="


def documented_signature(secret: str, timestamp: str, body: bytes) -> str:
    return base64.b64encode(hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()).decode()


def post_signed(connection, body: bytes, timestamp: str, signature: str):
    return Client().post(
        f"/markets/hooks/prolific/{connection.webhook_key}/",
        data=body,
        content_type="application/json",
        HTTP_X_PROLIFIC_REQUEST_TIMESTAMP=timestamp,
        HTTP_X_PROLIFIC_REQUEST_SIGNATURE=signature,
    )


def test_the_signature_is_prolifics_documented_recipe():
    assert documented_signature(SECRET, VECTOR_TIMESTAMP, VECTOR_BODY) == VECTOR_SIGNATURE
    assert events.prolific_signature(SECRET, VECTOR_TIMESTAMP, VECTOR_BODY) == VECTOR_SIGNATURE
    assert events.prolific_signature(SECRET, "1767225601", VECTOR_BODY) != VECTOR_SIGNATURE


@pytest.fixture
def hooked(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1)
    body = json.dumps(
        {
            "event_type": "submission.status.change",
            "resource_id": session.external_session_id,
            "status": "RETURNED",
        }
    ).encode()
    return connection, session, body


def test_a_webhook_signed_by_the_recipe_is_heard_and_one_without_the_timestamp_is_refused(hooked):
    connection, session, body = hooked
    timestamp = str(int(time.time()))
    body_only = base64.b64encode(hmac.new(SECRET.encode(), body, hashlib.sha256).digest()).decode()
    other_time = documented_signature(SECRET, str(int(timestamp) - 1), body)

    refused = [post_signed(connection, body, timestamp, forged).status_code for forged in (body_only, other_time)]
    heard = post_signed(connection, body, timestamp, documented_signature(SECRET, timestamp, body))

    assert refused == [403, 403]
    assert heard.status_code == 200
    session.refresh_from_db()
    assert session.closed_at is not None
    assert WebhookDelivery.objects.count() == 1


@pytest.mark.parametrize("ahead", [360, 3600])  # past the 300 s window by more than any test run takes
def test_a_webhook_from_the_future_is_refused_as_stale(hooked, ahead):
    connection, session, body = hooked
    timestamp = str(int(time.time()) + ahead)

    answer = post_signed(connection, body, timestamp, documented_signature(SECRET, timestamp, body))

    assert answer.status_code == 403 and "Stale" in answer.json()["detail"]
    session.refresh_from_db()
    assert session.closed_at is None
    assert not WebhookDelivery.objects.exists()


# --- item 7: the sealed credentials -------------------------------------------------------------


def test_a_rotated_key_still_opens_what_the_old_one_sealed_and_seals_with_the_new(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.MARKET_CREDENTIALS_KEY = old
    sealed_before = seal({"token": "before"})

    settings.MARKET_CREDENTIALS_KEY = f"{new},{old}"
    assert unseal(sealed_before) == {"token": "before"}
    sealed_after = seal({"token": "after"})

    settings.MARKET_CREDENTIALS_KEY = new
    assert unseal(sealed_after) == {"token": "after"}
    settings.MARKET_CREDENTIALS_KEY = old
    with pytest.raises(SealingUnavailable):
        unseal(sealed_after)


def test_saving_a_connection_after_rotation_reseals_its_credentials_under_the_new_key(standin, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.MARKET_CREDENTIALS_KEY = old
    study = make_study()
    connect_prolific(study, standin)

    settings.MARKET_CREDENTIALS_KEY = f"{new},{old}"
    connection = connections.save_connection(study, market="prolific", market_study_id=standin.study_id)  # blank: kept
    settings.MARKET_CREDENTIALS_KEY = new

    assert unseal(connection.sealed_credentials) == {"token": standin.prolific_token}
    assert unseal_text(connection.sealed_webhook_secret) == SECRET
    assert connections.test_connection(connection)[0]


def test_credentials_sealed_under_another_key_fail_loudly_and_nothing_is_sent(standin, django_user_model, settings):
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()
    study = make_study()
    connection = connect_prolific(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 1), per_session=1)
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()  # the key was changed

    with pytest.raises(SealingUnavailable):
        unseal(connection.sealed_credentials)
    with pytest.raises(SealingUnavailable):
        payments.pay_owed_bonuses(study)
    assert not MarketCall.objects.exists(), "no request went out with empty credentials"
    assert not BonusPayment.objects.exists(), "no bonus was claimed by a payer that cannot pay"
    assert standin.requests == []


def test_after_a_lost_key_the_credentials_entered_again_are_saved(standin, settings):
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()
    study = make_study()
    connect_prolific(study, standin)
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()  # the old key is gone

    with pytest.raises(connections.ConnectionRefused, match="needs an API token"):
        connections.save_connection(study, market="prolific", market_study_id=standin.study_id)
    connection = connect_prolific(study, standin)  # the token and the webhook secret entered again

    assert connections.test_connection(connection)[0]
    assert unseal_text(connection.sealed_webhook_secret) == SECRET
