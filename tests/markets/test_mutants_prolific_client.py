"""Prolific's client (markets/clients/prolific.py) against a scripted local HTTP server.

The market stand-in (tests/markets/standin.py) answers as Prolific does; the edges of the client
need answers Prolific gives rarely (a redirect, an empty or non-JSON body, a paged listing, each
error shape), so this file's server answers exactly what each test scripts and keeps every
request it was sent. It pins: where a request goes and what it carries (the token, JSON, no
redirect followed, never another host), what each call records (its summary and answer cut to
their lengths, its status, time and error), the researcher's one-line message for each refusal,
the rate limit waited out only while the client is patient and the wait is short, a time-out and
a dropped connection told apart, the listing followed page by page, and every id checked before
it is put in a request.
"""

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from markets.clients import CallRecord, MarketError, MarketTimeout, MarketUnreachable, no_record
from markets.clients.prolific import ProlificClient, _detail
from markets.ids import ARRIVAL_FORMAT, PROLIFIC_FORMAT, TOKEN_FORMAT, BadMarketId
from tests.markets.scripted_market import Reply, Request, ScriptedServer

STUDY = "5fa0000000000000000000a1"
GROUP = "5fa0000000000000000000b2"


class ScriptedMarket(ScriptedServer):
    @property
    def seen(self) -> list[Request]:
        return self.requests


@pytest.fixture
def market() -> Iterator[ScriptedMarket]:
    server = ScriptedMarket().start()
    yield server
    server.stop()


@pytest.fixture
def calls() -> list[CallRecord]:
    return []


@pytest.fixture
def client(market: ScriptedMarket, calls: list[CallRecord]) -> ProlificClient:
    return ProlificClient("tok-1", base_url=f"{market.url}/api/v1", record=calls.append, timeout=2)


def refusal(what: str, value: str, fmt: str) -> str:
    return f"{what} {value!r} is not a market id: {fmt}."


# --- the client's settings ----------------------------------------------------------------------


def test_a_client_without_a_base_url_or_timeout_uses_the_settings(settings: Any) -> None:
    settings.PROLIFIC_API_URL = "http://prolific.test/api/v1//"
    settings.MARKET_TIMEOUT_SECONDS = 7

    client = ProlificClient("tok")

    assert client.token == "tok"
    assert client.base_url == "http://prolific.test/api/v1/"
    assert client.timeout == 7.0 and isinstance(client.timeout, float)
    assert client.patient is True
    assert client.record is no_record
    assert isinstance(client.session, requests.Session)


def test_a_given_base_url_gets_one_trailing_slash_and_a_given_timeout_is_kept_even_zero(
    settings: Any,
) -> None:
    settings.MARKET_TIMEOUT_SECONDS = 7

    client = ProlificClient("tok", base_url="http://other.test/api/v2", timeout=0)

    assert client.base_url == "http://other.test/api/v2/"
    assert client.timeout == 0.0 and isinstance(client.timeout, float)
    assert ProlificClient("tok", base_url="http://other.test/", timeout=3).timeout == 3.0
    assert ProlificClient("tok", base_url="http://other.test/vX").base_url == "http://other.test/vX/"


def test_a_path_is_joined_under_the_base_without_its_leading_slash() -> None:
    client = ProlificClient("tok", base_url="http://prolific.test/api/v1/")

    assert client._url("/studies/x/") == "http://prolific.test/api/v1/studies/x/"
    assert client._url("users/me/") == "http://prolific.test/api/v1/users/me/"
    assert client._url("X-1/") == "http://prolific.test/api/v1/X-1/"


# --- a request and its record -------------------------------------------------------------------


def test_a_read_carries_the_token_asks_for_json_and_records_its_answer(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"id": "u-1"}))

    assert client.me() == {"id": "u-1"}

    [seen] = market.seen
    assert (seen.method, seen.path, seen.body) == ("GET", "/api/v1/users/me/", b"")
    assert seen.headers["authorization"] == "Token tok-1"
    assert seen.headers["accept"] == "application/json"
    [call] = calls
    assert call.action == "test.me"
    assert call.request_summary == "GET /api/v1/users/me/"
    assert (call.status_code, call.answer, call.ok, call.error) == (200, '{"id": "u-1"}', True, "")
    assert 0 <= call.duration_ms < 2000


def test_an_answers_wait_is_recorded_in_milliseconds(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(hold=0.3, body={"id": "u-1"}))

    client.me()

    assert 250 <= calls[0].duration_ms < 3000


def test_a_client_with_no_recorder_still_answers(market: ScriptedMarket) -> None:
    market.answer(Reply(body={"id": "u-2"}))

    assert ProlificClient("tok", base_url=f"{market.url}/api/v1/").me() == {"id": "u-2"}


def test_a_write_sends_its_payload_as_json_and_records_it_in_the_summary(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"ok": 1}))

    assert client.approve(STUDY, ["pid-1", "pid.2"]) == {"ok": 1}

    payload = {"study_id": STUDY, "participant_ids": ["pid-1", "pid.2"]}
    [seen] = market.seen
    assert (seen.method, seen.path) == ("POST", "/api/v1/submissions/bulk-approve/")
    assert json.loads(seen.body) == payload
    assert seen.headers["content-type"] == "application/json"
    [call] = calls
    assert call.action == "approve"
    assert call.request_summary == f"POST /api/v1/submissions/bulk-approve/ {json.dumps(payload)}"


def test_a_long_payload_is_summarised_in_its_first_1500_characters(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    ids = [f"participant-{n:04d}" for n in range(200)]
    market.answer(Reply(body={}))

    client.approve(STUDY, ids)

    payload = json.dumps({"study_id": STUDY, "participant_ids": ids})
    assert calls[0].request_summary == "POST /api/v1/submissions/bulk-approve/ " + payload[:1500]


def test_a_long_answer_is_recorded_in_its_first_4000_characters_and_returned_whole(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    body = {"id": "u", "note": "n" * 5000}
    market.answer(Reply(body=body))

    assert client.me() == body
    assert calls[0].answer == json.dumps(body)[:4000]


def test_an_empty_or_non_json_answer_is_no_body(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(status=204), Reply(raw=b"accepted"), Reply(status=200))

    assert client.request("POST", "submissions/bulk-approve/", "approve", {}) is None
    assert client.request("GET", "users/me/", "test.me") is None
    assert client.me() == {}
    assert [(call.status_code, call.answer, call.ok) for call in calls] == [
        (204, "", True),
        (200, "accepted", True),
        (200, "", True),
    ]


def test_a_redirect_is_not_followed(client: ProlificClient, market: ScriptedMarket) -> None:
    market.answer(Reply(status=302, body={"moved": True}, headers={"Location": "/api/v1/elsewhere/"}))

    assert client.me() == {"moved": True}
    assert [seen.path for seen in market.seen] == ["/api/v1/users/me/"]


def test_a_status_below_400_is_an_answer(client: ProlificClient, market: ScriptedMarket) -> None:
    market.answer(Reply(status=399, body={"id": "odd"}))

    assert client.me() == {"id": "odd"}


def test_a_link_to_another_host_is_not_followed(client: ProlificClient, market: ScriptedMarket) -> None:
    with pytest.raises(MarketError) as refused:
        client.request("GET", "http://elsewhere.test/api/v1/users/me/", "test.me")

    assert str(refused.value) == "Prolific's answer pointed at another host; it was not followed."
    assert market.seen == []


def test_a_path_beginning_with_http_is_taken_as_a_link_and_refused_without_a_host(
    client: ProlificClient, market: ScriptedMarket
) -> None:
    with pytest.raises(MarketError, match="another host"):
        client.request("GET", "httpdocs/", "test.me")

    assert market.seen == []


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Prolific refused the request (400): Nope."),
        (401, "Prolific refused the API token (401): Nope."),
        (403, "Prolific refused the API token (403): Nope."),
        (404, "Prolific does not know this (404): Nope."),
        (402, "Prolific refused the request (402): Nope."),
        (499, "Prolific refused the request (499): Nope."),
        (500, "Prolific had an error (500): Nope."),
        (503, "Prolific had an error (503): Nope."),
    ],
)
def test_a_refusal_is_one_line_naming_what_prolific_refused(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord], status: int, message: str
) -> None:
    market.answer(Reply(status=status, body={"error": {"detail": "Nope."}}))

    with pytest.raises(MarketError) as refused:
        client.me()

    assert type(refused.value) is MarketError
    assert (str(refused.value), refused.value.status) == (message, status)
    [call] = calls
    assert (call.status_code, call.ok, call.error) == (status, False, message)
    assert call.answer == '{"error": {"detail": "Nope."}}'
    assert len(market.seen) == 1


def test_a_refusal_without_json_says_its_text(client: ProlificClient, market: ScriptedMarket) -> None:
    market.answer(Reply(status=502, raw=b"Bad gateway " + b"g" * 300))

    with pytest.raises(MarketError) as refused:
        client.me()

    assert str(refused.value) == "Prolific had an error (502): " + ("Bad gateway " + "g" * 300)[:200]


LONG = {"amount": ["x" * 300]}


@pytest.mark.parametrize(
    ("body", "text", "detail"),
    [
        ({"error": {"detail": "d", "title": "t"}}, "", "d"),
        ({"error": {"title": "t", "message": "m"}}, "", "t"),
        ({"error": {"message": "m", "non_field_errors": ["n"]}}, "", "m"),
        ({"error": {"non_field_errors": ["n"]}}, "", '["n"]'),
        ({"error": {"detail": "", "title": "t"}}, "", "t"),
        ({"error": {"detail": LONG}}, "", json.dumps(LONG)[:200]),
        ({"error": {"code": 7}}, "", '{"code": 7}'),
        ({"error": {"code": "y" * 300}}, "", json.dumps({"code": "y" * 300})[:200]),
        ({"detail": "top"}, "", "top"),
        ({"error": "plain"}, "", "plain"),
        ({"error": 5}, "text", "text"),
        (None, "t" * 300, "t" * 200),
        (["x"], "", "no details given"),
        ("s", "", "no details given"),
    ],
)
def test_an_error_answers_reason_is_its_first_named_detail(body: Any, text: str, detail: str) -> None:
    assert _detail(body, text) == detail


# --- no answer ----------------------------------------------------------------------------------


def test_no_answer_in_time_is_a_time_out_recorded_with_its_wait(
    market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    client = ProlificClient("tok", base_url=f"{market.url}/api/v1/", record=calls.append, timeout=0.3)
    market.answer(Reply(hold=5, body={}))

    with pytest.raises(MarketTimeout) as late:
        client.me()

    assert str(late.value) == "No answer from Prolific within 0.3 s."
    assert isinstance(late.value.__cause__, requests.Timeout)
    [call] = calls
    assert (call.action, call.error, call.ok, call.status_code) == ("test.me", str(late.value), False, None)
    assert 250 <= call.duration_ms < 3000


def test_a_dropped_connection_is_unreachable_recorded_with_its_wait(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(hold=0.3, drop=True))

    with pytest.raises(MarketUnreachable) as gone:
        client.me()

    assert type(gone.value) is MarketUnreachable
    assert str(gone.value) == "Prolific could not be reached (ConnectionError)."
    assert isinstance(gone.value.__cause__, requests.ConnectionError)
    [call] = calls
    assert (call.error, call.ok, call.status_code) == (str(gone.value), False, None)
    assert 250 <= call.duration_ms < 3000


# --- the rate limit -----------------------------------------------------------------------------


def test_a_patient_client_waits_out_a_rate_limit_and_records_both_tries(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(status=429, body={"error": {"detail": "slow"}}, headers={"Retry-After": "0"}))
    market.answer(Reply(body={"id": "u"}))

    assert client.me() == {"id": "u"}

    assert len(market.seen) == 2
    first, second = calls
    assert (first.status_code, first.ok) == (429, False)
    assert first.error == "Prolific's rate limit (429); retry after 0 s."
    assert first.answer == '{"error": {"detail": "slow"}}'
    assert (second.status_code, second.ok, second.error) == (200, True, "")


def test_a_rate_limit_three_times_running_is_given_up(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(*[Reply(status=429, headers={"Retry-After": "0"}) for _ in range(4)])
    market.answer(Reply(body={"id": "u"}))

    with pytest.raises(MarketError) as busy:
        client.me()

    assert (str(busy.value), busy.value.status) == ("Prolific's rate limit: try again in 0 s.", 429)
    assert len(market.seen) == 3 and len(calls) == 3


def test_an_impatient_client_never_waits_out_a_rate_limit(market: ScriptedMarket, calls: list[CallRecord]) -> None:
    client = ProlificClient("tok", base_url=f"{market.url}/api/v1/", record=calls.append, patient=False)
    market.answer(Reply(status=429, headers={"Retry-After": "0"}), Reply(body={"id": "u"}))

    with pytest.raises(MarketError) as busy:
        client.me()

    assert busy.value.status == 429
    assert len(market.seen) == 1


@pytest.mark.parametrize(("wait", "tries"), [("0.06", 1), ("0.05", 2)])
def test_a_wait_longer_than_the_cap_is_not_waited(
    client: ProlificClient, market: ScriptedMarket, settings: Any, wait: str, tries: int
) -> None:
    settings.MARKET_RETRY_WAIT_MAX_SECONDS = 0.05
    market.answer(Reply(status=429, headers={"Retry-After": wait}), Reply(body={"id": "u"}))

    if tries == 1:
        with pytest.raises(MarketError, match=f"try again in {wait} s"):
            client.me()
    else:
        assert client.me() == {"id": "u"}
    assert len(market.seen) == tries


@pytest.mark.parametrize(
    ("header", "said"),
    [(None, "1"), ("-3", "0"), ("soon", "1"), ("0.25", "0.25")],
)
def test_the_wait_asked_is_retry_after_never_negative_one_second_unless_said(
    market: ScriptedMarket, header: str | None, said: str
) -> None:
    client = ProlificClient("tok", base_url=f"{market.url}/api/v1/", patient=False)
    market.answer(Reply(status=429, headers={"Retry-After": header} if header else {}))

    with pytest.raises(MarketError) as busy:
        client.me()

    assert str(busy.value) == f"Prolific's rate limit: try again in {said} s."


# --- the reads ----------------------------------------------------------------------------------


def test_a_study_is_read_by_its_checked_id(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"id": STUDY}), Reply(status=200))

    assert client.study(STUDY) == {"id": STUDY}
    assert client.study(STUDY) == {}

    assert [seen.path for seen in market.seen] == [f"/api/v1/studies/{STUDY}/"] * 2
    assert [(call.action, call.request_summary) for call in calls] == [
        ("test.study", f"GET /api/v1/studies/{STUDY}/")
    ] * 2


def test_a_study_id_out_of_format_is_refused_before_any_request(client: ProlificClient, market: ScriptedMarket) -> None:
    with pytest.raises(MarketError) as refused:
        client.study("../users/me/#")

    assert str(refused.value) == refusal("The Prolific study id", "../users/me/#", PROLIFIC_FORMAT)
    assert isinstance(refused.value.__cause__, BadMarketId)
    assert market.seen == []


def test_submissions_are_read_page_by_page_keeping_only_rows(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    second = f"{market.url}/api/v1/studies/{STUDY}/submissions/?page=2"
    market.answer(
        Reply(body={"results": [{"id": "a"}, "junk", 3], "_links": {"next": {"href": second}}}),
        Reply(body={"results": [{"id": "b"}], "_links": {"next": {"href": None}}}),
    )

    assert client.submissions(STUDY) == [{"id": "a"}, {"id": "b"}]

    assert [seen.path for seen in market.seen] == [
        f"/api/v1/studies/{STUDY}/submissions/",
        f"/api/v1/studies/{STUDY}/submissions/?page=2",
    ]
    assert [(call.action, call.request_summary) for call in calls] == [
        ("submissions.list", f"GET /api/v1/studies/{STUDY}/submissions/"),
        ("submissions.list", f"GET /api/v1/studies/{STUDY}/submissions/"),
    ]


@pytest.mark.parametrize(
    "links",
    [
        {},
        {"_links": None},
        {"_links": {"next": None}},
        {"_links": {"next": {"href": ""}}},
        {"_links": {"next": {"href": 7}}},
    ],
)
def test_a_page_without_a_next_link_is_the_last(
    client: ProlificClient, market: ScriptedMarket, links: dict[str, Any]
) -> None:
    market.answer(Reply(body={"results": [{"id": "a"}], **links}), Reply(body={"results": [{"id": "z"}]}))

    assert client.submissions(STUDY) == [{"id": "a"}]
    assert len(market.seen) == 1


def test_an_empty_listing_is_no_submissions(client: ProlificClient, market: ScriptedMarket) -> None:
    market.answer(Reply(status=200), Reply(body={"_links": {}}))

    assert client.submissions(STUDY) == []
    assert client.submissions(STUDY) == []


def test_a_next_link_to_another_host_is_not_followed(client: ProlificClient, market: ScriptedMarket) -> None:
    market.answer(Reply(body={"results": [], "_links": {"next": {"href": "http://elsewhere.test/page2"}}}))

    with pytest.raises(MarketError, match="another host"):
        client.submissions(STUDY)
    assert len(market.seen) == 1


def test_one_submission_is_read_by_its_checked_id_and_only_as_an_object(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"participant_id": "p"}), Reply(body=["not", "a", "row"]))

    assert client.submission("sub_1-x") == {"participant_id": "p"}
    assert client.submission("sub_1-x") == {}

    assert [seen.path for seen in market.seen] == ["/api/v1/submissions/sub_1-x/"] * 2
    assert [(call.action, call.request_summary) for call in calls] == [
        ("submission.get", "GET /api/v1/submissions/sub_1-x/")
    ] * 2
    with pytest.raises(MarketError) as refused:
        client.submission("a/b")
    assert str(refused.value) == refusal("The submission id", "a/b", TOKEN_FORMAT)
    assert len(market.seen) == 2


# --- the writes ---------------------------------------------------------------------------------


def test_an_approval_checks_the_study_and_each_participant_id_before_asking(
    client: ProlificClient, market: ScriptedMarket
) -> None:
    with pytest.raises(MarketError) as bad_participant:
        client.approve(STUDY, ["good", "a/b"])
    with pytest.raises(MarketError) as bad_study:
        client.approve("nope", ["good"])

    assert str(bad_participant.value) == refusal("The participant's id", "a/b", ARRIVAL_FORMAT)
    assert str(bad_study.value) == refusal("The Prolific study id", "nope", PROLIFIC_FORMAT)
    assert market.seen == []


def test_a_rejection_transitions_the_submission_with_its_message_and_category(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"status": "REJECTED"}))

    assert client.reject("sub-9", "No attention.", "FAILED_CHECK") == {"status": "REJECTED"}

    [seen] = market.seen
    assert (seen.method, seen.path) == ("POST", "/api/v1/submissions/sub-9/transition/")
    assert json.loads(seen.body) == {
        "action": "REJECT",
        "message": "No attention.",
        "rejection_category": "FAILED_CHECK",
    }
    assert calls[0].action == "reject"
    assert calls[0].request_summary.startswith("POST /api/v1/submissions/sub-9/transition/ {")
    with pytest.raises(MarketError, match="The submission id 'x y'"):
        client.reject("x y", "m", "c")


def test_a_bulk_bonus_is_created_for_the_study_and_its_answer_kept(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(status=201, body={"id": "bulk-1", "total_amount": 150}))

    assert client.create_bonuses(STUDY, "pid-1,1.50\n") == {"id": "bulk-1", "total_amount": 150}

    [seen] = market.seen
    assert (seen.method, seen.path) == ("POST", "/api/v1/submissions/bonus-payments/")
    assert json.loads(seen.body) == {"study_id": STUDY, "csv_bonuses": "pid-1,1.50\n"}
    assert calls[0].action == "bonus.create"
    assert calls[0].request_summary.startswith("POST /api/v1/submissions/bonus-payments/ {")
    with pytest.raises(MarketError, match="The Prolific study id"):
        client.create_bonuses("x", "pid-1,1.50\n")


@pytest.mark.parametrize("reply", [Reply(body={}), Reply(body={"id": ""}), Reply(body=["bulk-1"]), Reply(status=201)])
def test_a_bulk_bonus_answer_without_an_id_is_an_error(
    client: ProlificClient, market: ScriptedMarket, reply: Reply
) -> None:
    market.answer(reply)

    with pytest.raises(MarketError) as none_made:
        client.create_bonuses(STUDY, "pid-1,1.50\n")

    assert str(none_made.value) == "Prolific created no bulk bonus (its answer has no id)."


def test_a_bulk_bonus_is_paid_by_its_checked_id_with_no_payload(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(status=202, body={}))

    assert client.pay_bonuses("bulk-1") == {}

    [seen] = market.seen
    assert (seen.method, seen.path, seen.body) == ("POST", "/api/v1/bulk-bonus-payments/bulk-1/pay/", b"")
    assert (calls[0].action, calls[0].request_summary) == ("bonus.pay", "POST /api/v1/bulk-bonus-payments/bulk-1/pay/")
    with pytest.raises(MarketError) as refused:
        client.pay_bonuses("../x")
    assert str(refused.value) == refusal("The bulk bonus id", "../x", TOKEN_FORMAT)
    assert len(market.seen) == 1


def test_participants_are_added_to_a_checked_participant_group(
    client: ProlificClient, market: ScriptedMarket, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"id": GROUP}))

    assert client.add_to_group(GROUP, ["pid-1"]) == {"id": GROUP}

    [seen] = market.seen
    assert (seen.method, seen.path) == ("POST", f"/api/v1/participant-groups/{GROUP}/participants/")
    assert json.loads(seen.body) == {"participant_ids": ["pid-1"]}
    assert calls[0].action == "list.add"
    assert calls[0].request_summary.startswith(f"POST /api/v1/participant-groups/{GROUP}/participants/ {{")
    with pytest.raises(MarketError) as refused:
        client.add_to_group("group-1", ["pid-1"])
    assert str(refused.value) == refusal("The participant group id", "group-1", PROLIFIC_FORMAT)
    with pytest.raises(MarketError, match="The participant's id"):
        client.add_to_group(GROUP, ["a b"])
    assert len(market.seen) == 1
