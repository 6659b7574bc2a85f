"""Study links and logins: no silent handover of open claims between sessions, signed links,
market-like local usernames, login lockout and API throttles."""

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from collection.models import WritingClaim
from corpus.models import Market, Worker
from crowd.models import ClaimStatus, StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup

PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc", "SESSION_ID": "sess-001"}
GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study(db):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 6)
    return make_study(dataset, tasks_per_batch=1, completion_code="CODE-1")


def entry(study):
    return reverse("study_entry", args=[study.slug])


def nothing_created():
    return not Worker.objects.exists() and not StudySession.objects.exists() and not get_user_model().objects.exists()


def test_a_new_session_id_does_not_inherit_the_open_claim_of_the_earlier_session(client, study):
    client.get(entry(study), PROLIFIC)
    first_task = client.get(reverse("writing_next"))["Location"]
    first_claim = WritingClaim.objects.get()
    # The same participant opens the link again with another SESSION_ID (another tab, or a shared link).
    response = client.get(entry(study), {**PROLIFIC, "SESSION_ID": "sess-002"}, follow=True)
    assert "unfinished task of your earlier session was given back" in response.content.decode()
    first_claim.refresh_from_db()
    assert first_claim.status == ClaimStatus.RELEASED
    second = StudySession.objects.get(external_session_id="sess-002")
    new_claim = WritingClaim.objects.get(status=ClaimStatus.OPEN)
    assert new_claim.study_session == second and new_claim.premise != first_claim.premise
    # The released task cannot be submitted to count for either session.
    client.post(first_task, GOOD)
    first = StudySession.objects.get(external_session_id="sess-001")
    assert first.tasks_done == 0 and not first.completion_code
    assert WritingClaim.objects.filter(status=ClaimStatus.SUBMITTED).count() == 0


def test_reopening_the_same_session_keeps_its_claim(client, study):
    client.get(entry(study), PROLIFIC)
    client.get(reverse("writing_next"))
    claim = WritingClaim.objects.get()
    response = client.get(entry(study), PROLIFIC, follow=True)
    assert "given back" not in response.content.decode()
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN


def test_signed_links(client, study):
    study.require_signed_link = True
    study.save()
    good = study.link_signature()
    for params, problem in [
        (PROLIFIC, "not signed correctly"),
        ({**PROLIFIC, "sig": "0" * len(good)}, "not signed correctly"),
        ({**PROLIFIC, "sig": make_study(study.dataset, slug="other").link_signature()}, "not signed correctly"),
    ]:
        response = client.get(entry(study), params)
        assert response.status_code == 400 and problem in response.content.decode()
        assert nothing_created()
    assert client.get(entry(study), {**PROLIFIC, "sig": good}).status_code == 302
    assert StudySession.objects.count() == 1


def test_the_admin_shows_the_signed_link(client, study, researcher):
    client.force_login(researcher)
    page = client.get(reverse("admin:crowd_study_change", args=[study.pk])).content.decode()
    assert f"sig={study.link_signature()}" in page
    # A full URL, ready to paste into the market (the test client's host is testserver).
    assert f"<code>http://testserver/study/{study.slug}/?sig={study.link_signature()}" in page


@pytest.mark.parametrize("local_name", ["prolific-5f1a2b3c4d5e6f7a8b9c0d1e", "Prolific-5f1a2b3c4d5e6f7a8b9c0d1e"])
def test_a_local_username_that_looks_like_a_market_id_does_not_break_arrival(client, study, make_worker, local_name):
    local = make_worker(username=local_name)
    response = client.get(entry(study), PROLIFIC)
    assert response.status_code == 302
    worker = Worker.objects.get(market=Market.PROLIFIC)
    assert worker.user != local.user and worker.external_id == PROLIFIC["PROLIFIC_PID"]
    assert int(client.session["_auth_user_id"]) == worker.user.pk
    # And the local account is untouched and still logs in as itself.
    local.user.refresh_from_db()
    assert local.user.has_usable_password() and local.market == Market.LOCAL


def _fail_login(client, path, username, password="wrong-password"):
    return client.post(path, {"username": username, "password": password})


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_login_lockout_after_repeated_failures(client, researcher, path):
    for _ in range(5):
        assert _fail_login(client, path, "researcher").status_code == 200
    # Paused from this address: even the right password gets a 429 until the pause has passed
    # (a minute after the fifth failure, doubling with each further one: tests/test_logins_and_tokens.py).
    response = client.post(path, {"username": "researcher", "password": "research-pass-1"})
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode() and response["Retry-After"] == "60"
    assert "_auth_user_id" not in client.session
    cache.clear()  # the pause has passed
    response = client.post(path, {"username": "researcher", "password": "research-pass-1"})
    assert response.status_code == 302


@override_settings(
    LOGIN_THROTTLE={
        "PATHS": ("/accounts/login/", "/admin/login/"),
        "FAILURES_PER_USERNAME": 100,
        "FAILURES_PER_ADDRESS": 3,
        "WINDOW_SECONDS": 60,
        "CLIENT_IP_HEADER": "HTTP_X_FORWARDED_FOR",
    }
)
def test_login_lockout_per_address_across_usernames(client, db):
    for n in range(3):
        client.post("/accounts/login/", {"username": f"guess{n}", "password": "x"}, HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert (
        client.post(
            "/accounts/login/", {"username": "another", "password": "x"}, HTTP_X_FORWARDED_FOR="203.0.113.9"
        ).status_code
        == 429
    )
    # Another client address is not locked out.
    assert (
        client.post(
            "/accounts/login/", {"username": "another", "password": "x"}, HTTP_X_FORWARDED_FOR="198.51.100.4"
        ).status_code
        == 200
    )


def test_a_successful_login_resets_the_username_count(client, researcher):
    for _ in range(4):
        _fail_login(client, "/accounts/login/", "researcher")
    assert client.post("/accounts/login/", {"username": "researcher", "password": "research-pass-1"}).status_code == 302
    client.logout()
    for _ in range(4):
        assert _fail_login(client, "/accounts/login/", "researcher").status_code == 200


def test_api_is_throttled(researcher, settings):
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "user": "3/minute"}
    original = SimpleRateThrottle.THROTTLE_RATES
    # djangorestframework-stubs types DEFAULT_THROTTLE_RATES' values as numbers; they are rates ("3/minute").
    SimpleRateThrottle.THROTTLE_RATES = rates  # type: ignore[assignment]
    try:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
        codes = [client.get("/api/stats/").status_code for _ in range(4)]
    finally:
        SimpleRateThrottle.THROTTLE_RATES = original
    assert 429 not in codes[:3] and codes[3] == 429


def test_api_throttles_are_configured():
    from django.conf import settings

    classes = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]
    assert isinstance(classes, list)
    assert "rest_framework.throttling.UserRateThrottle" in classes
    assert "rest_framework.throttling.AnonRateThrottle" in classes


def test_another_participants_arrival_leaves_an_open_claim_alone(client, study):
    client.get(entry(study), PROLIFIC)
    client.get(reverse("writing_next"))
    claim = WritingClaim.objects.get()
    other = Client()
    other.get(entry(study), {**PROLIFIC, "PROLIFIC_PID": "6a1b2c3d4e5f6a7b8c9d0e1f", "SESSION_ID": "sess-other"})
    other.get(reverse("writing_next"))
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN
    assert WritingClaim.objects.filter(status=ClaimStatus.OPEN).count() == 2
