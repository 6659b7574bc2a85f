"""A study's connection to its market (markets/connections.py), at the edges mutmut found unguarded:
the words each refusal says, what a saved connection stores (trimmed, sealed, kept when left blank)
and records in the audit log, whose calls a client records and where they go, the one line a
connection's check gives when the market answers with less, and which market errors refused
outright (against the market STAND-IN)."""

import re
import time
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone

from audit.models import AuditEntry
from crowd.models import Study
from markets import connections
from markets.clients import MarketError
from markets.clients.mturk import LIVE_URL, SANDBOX_URL, MTurkClient
from markets.clients.prolific import ProlificClient
from markets.connections import ConnectionRefused
from markets.models import MarketCall, MarketConnection
from markets.sealing import seal, unseal, unseal_text

from .conftest import connect_mturk, connect_prolific, make_study
from .standin import MarketStandIn

pytestmark = pytest.mark.django_db

HIT_TYPE = "3STANDINHITTYPE000000000000001"


class PlainerMarket(MarketStandIn):
    """The stand-in answering some reads with other bodies: Prolific's user (users/me/), the study
    (studies/{id}/, with its status code) and MTurk's balance, as a market may leave fields out."""

    def __init__(
        self,
        *,
        me: dict[str, Any] | None = None,
        study: tuple[int, dict[str, Any]] | None = None,
        balance: dict[str, Any] | None = None,
    ):
        super().__init__()
        self.me, self.study_answer, self.balance_answer = me, study, balance

    def _prolific(self, handler, method, raw):
        operation, status, body, headers = super()._prolific(handler, method, raw)
        if operation == "GET /api/v1/users/me/" and self.me is not None:
            body = self.me
        if operation == f"GET /api/v1/studies/{self.study_id}/" and self.study_answer is not None:
            status, body = self.study_answer
        return operation, status, body, headers

    def _mturk(self, handler, operation, raw):
        status, body, headers = super()._mturk(handler, operation, raw)
        if operation == "GetAccountBalance" and self.balance_answer is not None:
            body = self.balance_answer
        return status, body, headers


@pytest.fixture
def plainer(settings):
    started: list[PlainerMarket] = []

    def start(**answers: Any) -> PlainerMarket:
        market = PlainerMarket(**answers)
        market.start()
        settings.PROLIFIC_API_URL = f"{market.url}/api/v1/"
        settings.MTURK_ENDPOINT_URL = f"{market.url}/mturk"
        settings.MARKET_TIMEOUT_SECONDS = 1.0
        settings.MARKET_RETRY_WAIT_MAX_SECONDS = 1.0
        started.append(market)
        return market

    yield start
    for market in started:
        market.stop()


def connect_blank(study: Study, **fields: Any) -> MarketConnection:
    """A connection whose stored credentials name none of its market's keys (saved another way)."""
    connection = MarketConnection(study=study, webhook_key=f"key-{study.slug}", sealed_credentials=seal({}), **fields)
    connection.save()
    return connection


def refusal(**fields: Any) -> str:
    with pytest.raises(ConnectionRefused) as refused:
        connections.save_connection(**fields)
    return str(refused.value)


# --- a study without a connection --------------------------------------------------------------


def test_a_study_without_a_connection_has_none_and_an_action_on_the_market_is_refused_in_words():
    study = make_study()

    assert connections.connection_of(study) is None
    with pytest.raises(ConnectionRefused) as refused:
        connections.connected(study)
    assert str(refused.value) == "This study has no market connection."


def test_a_connected_study_gives_its_own_connection(standin):
    study = make_study()
    saved = connect_prolific(study, standin)
    connect_prolific(make_study("other-study"), standin)

    read = Study.objects.get(pk=study.pk)
    assert connections.connection_of(read) == saved
    assert connections.connected(read) == saved


# --- saving: the refusals, in words ------------------------------------------------------------


def test_a_market_other_than_prolific_or_mturk_is_refused():
    study = make_study()

    assert refusal(study=study, market="upwork", token="t", market_study_id="5fa0000000000000000000a1") == (
        "Choose Prolific or Mechanical Turk."
    )
    assert not MarketConnection.objects.exists()


def test_prolific_needs_a_token_that_is_not_blank_and_the_studys_id():
    study = make_study()

    assert refusal(study=study, market="prolific", token="   ", market_study_id="5fa0000000000000000000a1") == (
        "Prolific needs an API token (Prolific: Workspace settings → API tokens)."
    )
    assert refusal(study=study, market="prolific", token="t", market_study_id="   ") == (
        "Prolific needs the study's id (the STUDY_ID in the study's URL on Prolific)."
    )
    assert not MarketConnection.objects.exists()


@pytest.mark.parametrize(
    "keys",
    [
        {"access_key_id": "AKIA", "secret_access_key": "  "},
        {"access_key_id": "  ", "secret_access_key": "s"},
        {},
    ],
)
def test_mturk_needs_both_halves_of_its_aws_key(keys):
    study = make_study()

    assert refusal(study=study, market="mturk", hit_type_id=HIT_TYPE, **keys) == (
        "MTurk needs an AWS access key id and its secret access key."
    )
    assert not MarketConnection.objects.exists()


def test_mturk_needs_the_hit_type_that_is_not_blank():
    study = make_study()

    assert refusal(study=study, market="mturk", hit_type_id="  ", access_key_id="AKIA", secret_access_key="s") == (
        "MTurk needs the HIT type id the study's HITs share."
    )


def test_every_id_out_of_format_is_named_in_one_refusal():
    study = make_study()

    message = refusal(
        study=study,
        market="prolific",
        token="t",
        market_study_id="5fa0000000000000000000a1",
        qualified_list_id="a/b",
        excluded_list_id="c/d",
    )

    assert message == (
        "The qualified workers' list id 'a/b' is not a market id: Prolific's ids are 24 lower-case hexadecimal "
        "digits (e.g. 60a3f1c2b4e5d6f7a8b9c0d1). The excluded workers' list id 'c/d' is not a market id: "
        "Prolific's ids are 24 lower-case hexadecimal digits (e.g. 60a3f1c2b4e5d6f7a8b9c0d1)."
    )
    assert not MarketConnection.objects.exists()


def test_without_a_sealing_key_a_connection_is_refused_with_the_keys_words(settings):
    settings.MARKET_CREDENTIALS_KEY = ""
    study = make_study()

    message = refusal(study=study, market="prolific", token="t", market_study_id="5fa0000000000000000000a1")

    assert message.startswith("MARKET_CREDENTIALS_KEY is not set: the server cannot keep market credentials.")
    assert not MarketConnection.objects.exists()


# --- saving: what is stored ------------------------------------------------------------------


def test_a_prolific_connection_stores_its_fields_trimmed_and_only_its_token_sealed(researcher):
    study = make_study()

    connection = connections.save_connection(
        study,
        market="prolific",
        market_study_id=" 5fa0000000000000000000a1 ",
        hit_type_id="  ",
        token=" the-token ",
        access_key_id="AKIA-not-prolifics",
        secret_access_key="not-prolifics",
        webhook_secret=" whsec ",
        approve_automatically=True,
        qualified_list_id=" 5fa0000000000000000000b1 ",
        excluded_list_id=" 5fa0000000000000000000b2 ",
        by=researcher,
    )

    stored = MarketConnection.objects.get()
    assert stored.pk == connection.pk and stored.study == study
    assert (stored.market, stored.market_study_id, stored.hit_type_id) == ("prolific", "5fa0000000000000000000a1", "")
    assert (stored.qualified_list_id, stored.excluded_list_id) == (
        "5fa0000000000000000000b1",
        "5fa0000000000000000000b2",
    )
    assert stored.approve_automatically is True and stored.mturk_live is False
    assert unseal(stored.sealed_credentials) == {"token": "the-token"}
    assert unseal_text(stored.sealed_webhook_secret) == "whsec"


def test_an_mturk_connection_stores_its_hit_type_its_marketplace_and_only_its_aws_key_sealed():
    study = make_study()

    connections.save_connection(
        study,
        market="mturk",
        market_study_id="  ",
        hit_type_id=f" {HIT_TYPE} ",
        mturk_live=True,
        token="not-mturks",
        access_key_id=" AKIA ",
        secret_access_key=" the-secret ",
    )

    stored = MarketConnection.objects.get()
    assert (stored.market, stored.market_study_id, stored.hit_type_id) == ("mturk", "", HIT_TYPE)
    assert stored.mturk_live is True and stored.approve_automatically is False
    assert unseal(stored.sealed_credentials) == {"access_key_id": "AKIA", "secret_access_key": "the-secret"}
    assert stored.sealed_webhook_secret == ""


def test_saving_again_changes_the_one_connection_and_keeps_its_webhook_key(standin):
    study = make_study()
    first = connect_prolific(study, standin, approve_automatically=True)
    other = connect_prolific(make_study("other-study"), standin)

    again = connections.save_connection(
        study, market="prolific", market_study_id="5fa0000000000000000000c3", token="new-token"
    )

    assert MarketConnection.objects.filter(study=study).count() == 1
    assert again.pk == first.pk and again.webhook_key == first.webhook_key
    stored = MarketConnection.objects.get(pk=first.pk)
    assert stored.market_study_id == "5fa0000000000000000000c3" and stored.approve_automatically is False
    assert unseal(stored.sealed_credentials) == {"token": "new-token"}
    assert unseal_text(stored.sealed_webhook_secret) == "standin-webhook-secret"
    # The webhook key: 24 random bytes, URL-safe, one per connection.
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", first.webhook_key) and first.webhook_key != other.webhook_key


def test_a_connection_saved_with_only_what_its_market_needs_has_every_other_field_blank_or_off():
    prolific = connections.save_connection(
        make_study(), market="prolific", market_study_id="5fa0000000000000000000a1", token="t"
    )
    mturk = connections.save_connection(
        make_study("on-mturk"), market="mturk", hit_type_id=HIT_TYPE, access_key_id="AKIA", secret_access_key="s"
    )

    for saved, market_study_id, hit_type_id in ((prolific, "5fa0000000000000000000a1", ""), (mturk, "", HIT_TYPE)):
        stored = MarketConnection.objects.get(pk=saved.pk)
        assert (stored.market_study_id, stored.hit_type_id) == (market_study_id, hit_type_id)
        assert (stored.qualified_list_id, stored.excluded_list_id, stored.sealed_webhook_secret) == ("", "", "")
        assert stored.mturk_live is False and stored.approve_automatically is False
    assert unseal(prolific.sealed_credentials) == {"token": "t"}
    assert unseal(mturk.sealed_credentials) == {"access_key_id": "AKIA", "secret_access_key": "s"}
    assert AuditEntry.objects.filter(action="market.connection_saved", actor="").count() == 2


def test_a_prolific_token_and_webhook_secret_left_blank_keep_the_stored_ones():
    study = make_study()
    connections.save_connection(
        study, market="prolific", market_study_id="5fa0000000000000000000a1", token="the-token", webhook_secret="w"
    )

    connections.save_connection(study, market="prolific", market_study_id="5fa0000000000000000000c3", token="  ")

    stored = MarketConnection.objects.get()
    assert stored.market_study_id == "5fa0000000000000000000c3"
    assert unseal(stored.sealed_credentials) == {"token": "the-token"}
    assert unseal_text(stored.sealed_webhook_secret) == "w"


def test_an_mturk_half_left_blank_keeps_the_stored_half():
    study = make_study()
    connections.save_connection(
        study, market="mturk", hit_type_id=HIT_TYPE, access_key_id="AKIAOLD", secret_access_key="old-secret"
    )

    connections.save_connection(study, market="mturk", hit_type_id=HIT_TYPE, access_key_id="AKIANEW")
    assert unseal(MarketConnection.objects.get().sealed_credentials) == {
        "access_key_id": "AKIANEW",
        "secret_access_key": "old-secret",
    }
    connections.save_connection(study, market="mturk", hit_type_id=HIT_TYPE, secret_access_key="new-secret")
    assert unseal(MarketConnection.objects.get().sealed_credentials) == {
        "access_key_id": "AKIANEW",
        "secret_access_key": "new-secret",
    }


def test_moving_a_study_to_the_other_market_takes_none_of_the_old_markets_credentials(standin):
    study = make_study()
    connect_prolific(study, standin)

    assert refusal(study=study, market="mturk", hit_type_id=HIT_TYPE) == (
        "MTurk needs an AWS access key id and its secret access key."
    )
    connect_mturk(study, standin)
    assert refusal(study=study, market="prolific", market_study_id=standin.study_id) == (
        "Prolific needs an API token (Prolific: Workspace settings → API tokens)."
    )
    assert MarketConnection.objects.get().market == "mturk"


def test_after_a_lost_key_a_connection_saved_without_a_webhook_secret_has_none(standin, settings):
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()
    study = make_study()
    connect_prolific(study, standin)
    settings.MARKET_CREDENTIALS_KEY = Fernet.generate_key().decode()  # the old key is gone

    connection = connections.save_connection(
        study, market="prolific", market_study_id=standin.study_id, token=standin.prolific_token
    )

    assert connection.sealed_webhook_secret == ""
    assert MarketConnection.objects.get().sealed_webhook_secret == ""
    assert unseal(connection.sealed_credentials) == {"token": standin.prolific_token}


def test_saving_a_connection_records_who_which_study_and_the_ids_in_the_audit_log(researcher):
    study = make_study()

    connection = connections.save_connection(
        study,
        market="mturk",
        hit_type_id=HIT_TYPE,
        access_key_id="AKIA",
        secret_access_key="s",
        by=researcher,
    )

    (saved,) = AuditEntry.objects.all()
    assert (saved.action, saved.actor, saved.actor_id) == (
        "market.connection_saved",
        researcher.username,
        researcher.pk,
    )
    assert (saved.subject_type, saved.subject_id) == ("markets.marketconnection", str(connection.pk))
    assert saved.team_id == study.team_id
    assert saved.after == {"market": "mturk", "market_study_id": "", "hit_type_id": HIT_TYPE}


# --- the client and the calls it records -------------------------------------------------------


def test_a_prolific_client_waits_as_long_as_asked_and_as_patiently_as_asked(standin):
    connection = connect_prolific(make_study(), standin)

    impatient = connections.client_for(connection, timeout=0.25, patient=False)
    default = connections.client_for(connection)

    assert isinstance(impatient, ProlificClient) and isinstance(default, ProlificClient)
    assert (impatient.token, impatient.timeout, impatient.patient) == (standin.prolific_token, 0.25, False)
    assert (default.timeout, default.patient) == (1.0, True)


@pytest.mark.parametrize(("live", "endpoint"), [(True, LIVE_URL), (False, SANDBOX_URL)])
def test_an_mturk_client_goes_to_the_marketplace_the_connection_names(settings, live, endpoint):
    settings.MTURK_ENDPOINT_URL = ""
    connection = connections.save_connection(
        make_study(),
        market="mturk",
        hit_type_id=HIT_TYPE,
        mturk_live=live,
        access_key_id="AKIA",
        secret_access_key="s",
    )

    client = connections.client_for(connection)

    assert isinstance(client, MTurkClient)
    assert client.client.meta.endpoint_url == endpoint
    credentials = client.client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("AKIA", "s")


def test_stored_credentials_without_the_markets_keys_give_a_client_with_blank_ones(settings):
    settings.MTURK_ENDPOINT_URL = ""
    prolific = connect_blank(make_study(), market="prolific", market_study_id="5fa0000000000000000000a1")
    mturk = connect_blank(make_study("on-mturk"), market="mturk", hit_type_id=HIT_TYPE)

    prolific_client = connections.client_for(prolific)
    mturk_client = connections.client_for(mturk)

    assert isinstance(prolific_client, ProlificClient) and prolific_client.token == ""
    assert isinstance(mturk_client, MTurkClient)
    credentials = mturk_client.client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("", "")


def test_each_call_is_recorded_with_its_answer_who_made_it_and_given_back_when_asked(standin, researcher):
    connection = connect_prolific(make_study(), standin)
    calls: list[MarketCall] = []

    for client in (
        connections.client_for(connection, researcher, calls),
        connections.client_for(connection, AnonymousUser()),
    ):
        assert isinstance(client, ProlificClient)
        client.me()

    by_researcher, by_nobody = MarketCall.objects.order_by("pk")
    assert calls == [by_researcher]
    assert (by_researcher.connection, by_researcher.action, by_researcher.ok) == (connection, "test.me", True)
    assert (by_researcher.status_code, by_researcher.error) == (200, "")
    assert by_researcher.request_summary == "GET /api/v1/users/me/" and "researcher@example.org" in by_researcher.answer
    assert by_researcher.made_by == researcher and by_nobody.made_by is None


def test_a_call_is_recorded_with_how_long_the_market_took_to_answer(standin):
    connection = connect_prolific(make_study(), standin)
    standin.before_answer["GET /api/v1/users/me/"] = lambda: time.sleep(0.3)
    client = connections.client_for(connection)
    assert isinstance(client, ProlificClient)

    client.me()

    call = MarketCall.objects.get()
    assert call.ok and 300 <= call.duration_ms < 1000


def test_a_long_market_error_is_recorded_cut_to_what_the_call_keeps(plainer):
    market = plainer(study=(404, {"error": {"detail": "No such study. " * 40}}))
    connection = connect_prolific(make_study(), market)

    ok, line = connections.test_connection(connection)

    assert not ok and line.startswith("Prolific does not know this (404): No such study.")
    failed = MarketCall.objects.get(action="test.study")
    assert failed.status_code == 404 and not failed.ok
    assert len(failed.error) == 300 and failed.error.startswith("Prolific does not know this (404): No such study.")
    stored = MarketConnection.objects.get()
    assert (stored.last_check_ok, stored.last_check) == (False, line[:300])


# --- the connection's check --------------------------------------------------------------------


def test_the_check_records_its_calls_as_made_by_who_pressed_it(standin, researcher):
    connection = connect_prolific(make_study(), standin)

    assert connections.test_connection(connection, researcher)[0]

    assert {(call.action, call.made_by) for call in MarketCall.objects.all()} == {
        ("test.me", researcher),
        ("test.study", researcher),
    }


@pytest.mark.parametrize(
    ("me", "who"),
    [
        ({"id": "user-1", "email": ""}, "user-1"),
        ({"id": "", "email": ""}, "this token"),
        ({}, "this token"),
    ],
)
def test_a_prolific_user_without_an_email_is_named_by_id_or_as_this_token(plainer, me, who):
    market = plainer(me=me)
    connection = connect_prolific(make_study(), market)

    assert connections.test_connection(connection) == (
        True,
        f"Connected to Prolific as {who}: study “Stand-in study” (ACTIVE).",
    )


def test_a_study_answered_without_name_or_status_is_named_by_its_id_and_status_unknown(plainer):
    market = plainer(study=(200, {"id": "5fa0000000000000000000a1"}))
    connection = connect_prolific(make_study(), market)

    assert connections.test_connection(connection) == (
        True,
        "Connected to Prolific as researcher@example.org: study “5fa0000000000000000000a1” (status unknown).",
    )


def test_the_mturk_check_names_the_live_marketplace_and_a_balance_it_was_not_told(plainer):
    market = plainer(balance={})
    connection = connect_mturk(make_study(), market, mturk_live=True)

    assert connections.test_connection(connection) == (True, "Connected to the MTurk live marketplace: balance ? USD.")


def test_the_check_keeps_its_line_cut_to_300_characters_and_when_it_ran(standin):
    standin.study_name = "A very long study name " * 20
    connection = connect_prolific(make_study(), standin)
    before = timezone.now()

    ok, line = connections.test_connection(connection)

    stored = MarketConnection.objects.get()
    assert ok and len(line) > 300
    assert stored.last_check == line[:300] and stored.last_check_ok
    assert stored.last_checked_at is not None and before <= stored.last_checked_at <= timezone.now()


# --- which market errors refused outright ---------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "outright"),
    [
        (None, False),
        (399, False),
        (400, True),
        (404, True),
        (428, True),
        (429, False),
        (430, True),
        (499, True),
        (500, False),
        (503, False),
    ],
)
def test_only_a_4xx_other_than_the_rate_limit_is_a_refusal_outright(status, outright):
    assert connections.refused_outright(MarketError("The market said no.", status=status)) is outright
