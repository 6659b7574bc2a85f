"""Mechanical Turk's client (markets/clients/mturk.py), through boto3, against a scripted local
server speaking MTurk's JSON protocol (what boto3 sends: `X-Amz-Target:
MTurkRequesterServiceV20170117.<Operation>`, a JSON body; MTurk's errors as `__type` and `Message`).

The market stand-in (tests/markets/standin.py) answers as MTurk does; this file's server answers
exactly what each test scripts (each error code, a late or dropped answer, a paged listing) and
keeps every request. It pins: the endpoint (the setting, else the live or the sandbox marketplace),
the credentials, the time-outs and boto3's own retries off; each operation's name and parameters;
every id checked before a request; what each call records (its summary and answer cut to their
lengths, its status, time and error); the researcher's one-line message for each refusal; a
throttled call retried after a capped wait and given up on the third; a time-out, an unreachable
endpoint and a dropped answer told apart; and a listing followed by its NextToken.
"""

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError, ReadTimeoutError

from markets.clients import CallRecord, MarketError, MarketTimeout, MarketUnreachable, no_record
from markets.clients.mturk import LIVE_URL, SANDBOX_URL, MTurkClient, _message, _snake
from markets.ids import ARRIVAL_FORMAT, MTURK_FORMAT, BadMarketId
from tests.markets.scripted_market import Reply, ScriptedServer

TARGET = "MTurkRequesterServiceV20170117."
QUALIFICATION = "3QUAL0000000000000000000000001"


@dataclass
class Seen:
    operation: str
    params: dict[str, Any]
    authorization: str


class ScriptedMTurk(ScriptedServer):
    """MTurk's JSON protocol: each request's operation (`X-Amz-Target`), parameters and credentials."""

    def __init__(self) -> None:
        super().__init__(
            default=Reply(body={}),
            path="/mturk",
            content_type="application/x-amz-json-1.1",
            headers={"x-amzn-RequestId": "scripted-request"},
        )

    @property
    def seen(self) -> list[Seen]:
        return [
            Seen(
                request.headers.get("x-amz-target", "").removeprefix(TARGET),
                json.loads(request.body) if request.body else {},
                request.headers.get("authorization", ""),
            )
            for request in self.requests
        ]


@pytest.fixture
def market(settings: Any) -> Iterator[ScriptedMTurk]:
    server = ScriptedMTurk().start()
    settings.MTURK_ENDPOINT_URL = server.url
    settings.MARKET_TIMEOUT_SECONDS = 2.0
    settings.MARKET_RETRY_WAIT_MAX_SECONDS = 0.01
    yield server
    server.stop()


@pytest.fixture
def calls() -> list[CallRecord]:
    return []


@pytest.fixture
def client(market: ScriptedMTurk, calls: list[CallRecord]) -> MTurkClient:
    return MTurkClient("AKIATESTKEY", "test-secret", live=True, record=calls.append)


def error(code: str, message: str = "Nope.") -> dict[str, str]:
    return {"__type": code, "Message": message}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# --- the client's settings ----------------------------------------------------------------------


@pytest.mark.parametrize(("live", "url"), [(True, LIVE_URL), (False, SANDBOX_URL)])
def test_without_an_endpoint_setting_the_client_asks_the_live_or_sandbox_marketplace(
    settings: Any, live: bool, url: str
) -> None:
    settings.MTURK_ENDPOINT_URL = ""

    client = MTurkClient("AKIATESTKEY", "test-secret", live=live)

    assert client.client.meta.endpoint_url == url
    assert client.client.meta.region_name == "us-east-1"
    assert client.record is no_record


def test_the_client_carries_its_credentials_and_the_market_time_outs_without_retries(settings: Any) -> None:
    settings.MTURK_ENDPOINT_URL = "http://127.0.0.1:9/mturk"
    settings.MARKET_TIMEOUT_SECONDS = 4.5

    client = MTurkClient("AKIATESTKEY", "test-secret", live=True)

    assert client.client.meta.endpoint_url == "http://127.0.0.1:9/mturk"
    credentials = client.client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == ("AKIATESTKEY", "test-secret")
    config = client.client.meta.config
    assert (config.connect_timeout, config.read_timeout) == (4.5, 4.5)
    assert config.retries["total_max_attempts"] == 1


def test_a_call_is_signed_for_mturk_in_us_east_1(client: MTurkClient, market: ScriptedMTurk) -> None:
    client.balance()

    [seen] = market.seen
    assert "Credential=AKIATESTKEY/" in seen.authorization
    assert "/us-east-1/mturk-requester/aws4_request" in seen.authorization


def test_a_failed_call_is_not_resent_by_boto3(client: MTurkClient, market: ScriptedMTurk) -> None:
    market.answer(Reply(500, error("ServiceFault", "Internal")), Reply(body={}))

    with pytest.raises(MarketError) as failed:
        client.balance()

    assert (str(failed.value), failed.value.status) == ("MTurk refused the request (ServiceFault): Internal", 500)
    assert len(market.seen) == 1


# --- a call and its record ----------------------------------------------------------------------


def test_a_call_records_its_summary_status_and_answer_without_the_metadata(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"AvailableBalance": "10.00"}))

    answer = client.balance()

    assert answer["AvailableBalance"] == "10.00"
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert [(seen.operation, seen.params) for seen in market.seen] == [("GetAccountBalance", {})]
    [call] = calls
    assert (call.action, call.request_summary) == ("test.balance", "GetAccountBalance {}")
    assert (call.status_code, call.answer, call.ok, call.error) == (200, '{"AvailableBalance": "10.00"}', True, "")
    assert 0 <= call.duration_ms < 2000


def test_an_answers_wait_is_recorded_in_milliseconds(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(Reply(hold=0.3, body={"AvailableBalance": "10.00"}))

    client.balance()

    assert 250 <= calls[0].duration_ms < 3000


def test_a_long_answer_is_recorded_in_its_first_4000_characters(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"AvailableBalance": "1" * 5000}))

    client.balance()

    assert calls[0].answer == json.dumps({"AvailableBalance": "1" * 5000})[:4000]


def test_a_long_request_is_summarised_in_its_first_1500_characters(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    client.reject("A1", "r" * 2000)

    params = {"AssignmentId": "A1", "RequesterFeedback": "r" * 1024}
    assert [(seen.operation, seen.params) for seen in market.seen] == [("RejectAssignment", params)]
    assert calls[0].request_summary == "RejectAssignment " + json.dumps(params)
    assert calls[0].action == "reject"

    client.send_bonus("W1", "A1", "1.50", "r" * 2000, "token-1")

    bonus = {"WorkerId": "W1", "AssignmentId": "A1", "BonusAmount": "1.50", "Reason": "r" * 2000}
    summary = json.dumps({**bonus, "UniqueRequestToken": "token-1"})
    assert calls[1].request_summary == "SendBonus " + summary[:1500]


def test_a_parameter_json_cannot_write_is_summarised_as_its_text(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    expires = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)

    client.call("UpdateExpirationForHIT", "hit.expire", HITId="3HIT1", ExpireAt=expires)

    assert market.seen[0].operation == "UpdateExpirationForHIT"
    assert calls[0].request_summary == f'UpdateExpirationForHIT {{"HITId": "3HIT1", "ExpireAt": "{expires}"}}'


# --- ids ----------------------------------------------------------------------------------------


def test_each_id_is_checked_in_its_format_before_any_request(client: MTurkClient, market: ScriptedMTurk) -> None:
    with pytest.raises(MarketError) as bad_worker:
        client.call("SendBonus", "bonus.send", Reason="r", WorkerId="a/b")
    with pytest.raises(MarketError) as bad_hit:
        client.assignments_for_hit("../x")
    with pytest.raises(MarketError) as bad_type:
        client.qualify("3qual0000000000000000000000001", "W1")

    assert str(bad_worker.value) == f"The WorkerId 'a/b' is not a market id: {ARRIVAL_FORMAT}."
    assert isinstance(bad_worker.value.__cause__, BadMarketId)
    assert str(bad_hit.value) == f"The HITId '../x' is not a market id: {ARRIVAL_FORMAT}."
    assert str(bad_type.value) == (
        f"The qualification type id '3qual0000000000000000000000001' is not a market id: {MTURK_FORMAT}."
    )
    assert market.seen == []


def test_a_parameter_that_is_no_id_is_sent_as_it_is(client: MTurkClient, market: ScriptedMTurk) -> None:
    client.send_bonus("W1", "A1", "1.50", "Thanks / well done?#", "token/1")

    assert market.seen[0].params["Reason"] == "Thanks / well done?#"
    assert market.seen[0].params["UniqueRequestToken"] == "token/1"


# --- refusals -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("RequestError", "refused the request (RequestError)"),
        ("UnrecognizedClientException", "refused the credentials (UnrecognizedClientException)"),
        ("InvalidClientTokenId", "refused the credentials (InvalidClientTokenId)"),
        ("SignatureDoesNotMatch", "refused the credentials (SignatureDoesNotMatch)"),
        ("AccessDenied", "refused the credentials (AccessDenied)"),
    ],
)
def test_a_refusal_is_one_line_naming_its_code_status_and_message(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord], code: str, said: str
) -> None:
    market.answer(Reply(400, error(code, "Assignment does not exist."), hold=0.3))

    with pytest.raises(MarketError) as refused:
        client.approve("A1")

    message = f"MTurk {said}: Assignment does not exist."
    assert type(refused.value) is MarketError
    assert (str(refused.value), refused.value.status, refused.value.code) == (message, 400, code)
    assert isinstance(refused.value.__cause__, ClientError)
    [call] = calls
    assert (call.status_code, call.ok, call.error) == (400, False, message)
    assert json.loads(call.answer) == {"Code": code, "Message": "Assignment does not exist."}
    assert 250 <= call.duration_ms < 3000
    assert len(market.seen) == 1


def test_a_refusal_without_a_message_says_boto3s_words_and_a_long_one_is_recorded_cut(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(Reply(400, {"__type": "RequestError"}), Reply(400, error("RequestError", "m" * 5000)))

    with pytest.raises(MarketError) as bare:
        client.approve("A1")
    with pytest.raises(MarketError):
        client.approve("A1")

    boto3s_words = " ".join(str(bare.value.__cause__).split())
    assert str(bare.value) == f"MTurk refused the request (RequestError): {boto3s_words}"
    assert "when calling the ApproveAssignment operation" in str(bare.value)
    assert len(calls[1].answer) == 4000


def test_a_refusal_without_a_code_says_error() -> None:
    assert _message("", "m") == "MTurk refused the request (error): m"


# --- the rate limit -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        Reply(400, error("ThrottlingException")),
        Reply(400, error("Throttling")),
        Reply(400, error("TooManyRequestsException")),
        Reply(429, error("SlowDown")),
    ],
)
def test_a_throttled_call_is_retried_after_a_capped_wait_and_both_tries_recorded(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord], settings: Any, reply: Reply
) -> None:
    settings.MARKET_RETRY_WAIT_MAX_SECONDS = 0.1
    market.answer(reply, Reply(body={}))

    started = time.monotonic()
    client.approve("A1")
    waited = time.monotonic() - started

    # The cap, not the uncapped second: the upper bound leaves a loaded machine 0.8 s.
    assert 0.1 <= waited < 0.9
    assert [seen.operation for seen in market.seen] == ["ApproveAssignment"] * 2
    first, second = calls
    assert (first.status_code, first.ok, first.error) == (reply.status, False, "MTurk's rate limit (throttled).")
    assert json.loads(first.answer)["Code"] == reply.body["__type"]
    assert (second.ok, second.status_code) == (True, 200)


def test_a_call_throttled_three_times_is_given_up(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(*[Reply(400, error("ThrottlingException")) for _ in range(4)])

    with pytest.raises(MarketError) as busy:
        client.approve("A1")

    assert str(busy.value) == "MTurk's rate limit: try again in a minute."
    assert (busy.value.status, busy.value.code) == (429, "ThrottlingException")
    assert isinstance(busy.value.__cause__, ClientError)
    assert len(market.seen) == 3 and len(calls) == 3


# --- no answer ----------------------------------------------------------------------------------


def test_no_answer_in_time_is_a_time_out_recorded_with_its_wait(
    market: ScriptedMTurk, calls: list[CallRecord], settings: Any
) -> None:
    settings.MARKET_TIMEOUT_SECONDS = 0.3
    client = MTurkClient("AKIATESTKEY", "test-secret", live=True, record=calls.append)
    market.answer(Reply(hold=5))

    with pytest.raises(MarketTimeout) as late:
        client.send_bonus("W1", "A1", "1.50", "Thanks", "token-1")

    assert type(late.value) is MarketTimeout
    assert str(late.value) == "No answer from MTurk within 0.3 s."
    assert isinstance(late.value.__cause__, ReadTimeoutError)
    [call] = calls
    assert (call.action, call.error, call.ok, call.status_code) == ("bonus.send", str(late.value), False, None)
    assert 250 <= call.duration_ms < 3000
    assert len(market.seen) == 1


def test_an_endpoint_nobody_answers_is_unreachable(settings: Any, calls: list[CallRecord]) -> None:
    settings.MTURK_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}/mturk"
    client = MTurkClient("AKIATESTKEY", "test-secret", live=True, record=calls.append)

    with pytest.raises(MarketUnreachable) as gone:
        client.balance()

    assert type(gone.value) is MarketUnreachable
    assert str(gone.value) == "MTurk could not be reached."
    assert isinstance(gone.value.__cause__, EndpointConnectionError)
    assert [(call.error, call.ok) for call in calls] == [("MTurk could not be reached.", False)]


def test_a_connection_not_made_in_time_is_unreachable_not_a_time_out(settings: Any, calls: list[CallRecord]) -> None:
    """A listener whose one-place backlog is taken answers no further connection: the connection
    times out before any request was sent, so nothing was done at the market."""
    settings.MARKET_TIMEOUT_SECONDS = 0.3
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        address = listener.getsockname()
        with socket.create_connection(address):
            settings.MTURK_ENDPOINT_URL = f"http://{address[0]}:{address[1]}/mturk"
            client = MTurkClient("AKIATESTKEY", "test-secret", live=True, record=calls.append)
            with pytest.raises(MarketUnreachable) as gone:
                client.balance()

    assert type(gone.value) is MarketUnreachable
    assert str(gone.value) == "No answer from MTurk within 0.3 s."
    assert isinstance(gone.value.__cause__, ConnectTimeoutError)
    [call] = calls
    assert (call.error, call.ok, call.status_code) == (str(gone.value), False, None)
    assert 250 <= call.duration_ms < 3000


def test_a_dropped_answer_is_a_failed_call_not_an_unreachable_market(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(Reply(drop=True))

    with pytest.raises(MarketError) as failed:
        client.balance()

    assert type(failed.value) is MarketError
    assert str(failed.value) == "MTurk call failed (ConnectionClosedError)."
    assert [(call.error, call.ok) for call in calls] == [(str(failed.value), False)]


def test_a_call_boto3_refuses_to_send_is_a_failed_call(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    with pytest.raises(MarketError) as failed:
        client.call("SendBonus", "bonus.send", WorkerId="W1", AssignmentId="A1", BonusAmount=5, Reason="r")

    assert str(failed.value) == "MTurk call failed (ParamValidationError)."
    assert [(call.action, call.error) for call in calls] == [("bonus.send", str(failed.value))]
    assert market.seen == []


# --- the operations -----------------------------------------------------------------------------


def test_a_hits_assignments_are_listed_page_by_page_in_every_reviewable_status(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(
        Reply(body={"Assignments": [{"AssignmentId": "A1"}], "NextToken": "t1"}),
        Reply(body={"Assignments": [{"AssignmentId": "A2"}], "NextToken": ""}),
        Reply(body={"Assignments": [{"AssignmentId": "A3"}]}),
    )

    found = client.assignments_for_hit("3HIT1")

    assert found == [{"AssignmentId": "A1"}, {"AssignmentId": "A2"}]
    asked = {"HITId": "3HIT1", "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
    assert [(seen.operation, seen.params) for seen in market.seen] == [
        ("ListAssignmentsForHIT", asked),
        ("ListAssignmentsForHIT", {**asked, "NextToken": "t1"}),
    ]
    assert [call.action for call in calls] == ["assignments.list"] * 2


def test_a_page_without_its_items_adds_none(client: MTurkClient, market: ScriptedMTurk) -> None:
    market.answer(Reply(body={"NumResults": 0, "NextToken": "t1"}), Reply(body={"BonusPayments": [{"WorkerId": "W1"}]}))

    assert client.bonus_payments("A1") == [{"WorkerId": "W1"}]


def test_bonus_payments_are_listed_for_the_assignment(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    market.answer(Reply(body={"BonusPayments": [{"WorkerId": "W1", "BonusAmount": "1.50", "GrantTime": 1700000000}]}))

    [paid] = client.bonus_payments("A1")

    granted = paid.pop("GrantTime")
    assert paid == {"WorkerId": "W1", "BonusAmount": "1.50"}
    assert isinstance(granted, datetime)
    assert f'"GrantTime": "{granted}"' in calls[0].answer  # a time is recorded as its text
    assert [(seen.operation, seen.params) for seen in market.seen] == [
        ("ListBonusPayments", {"AssignmentId": "A1", "MaxResults": 100})
    ]
    assert calls[0].action == "bonus.list"


def test_an_approval_sends_feedback_only_when_given_and_cut_to_1024(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    client.approve("A1")
    client.approve("A2", "f" * 2000)

    assert [(seen.operation, seen.params) for seen in market.seen] == [
        ("ApproveAssignment", {"AssignmentId": "A1"}),
        ("ApproveAssignment", {"AssignmentId": "A2", "RequesterFeedback": "f" * 1024}),
    ]
    assert [call.action for call in calls] == ["approve", "approve"]


def test_a_bonus_is_sent_with_its_worker_assignment_amount_reason_and_token(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    client.send_bonus("W1", "A1", "1.50", "Thanks", "token-1")

    assert [(seen.operation, seen.params) for seen in market.seen] == [
        (
            "SendBonus",
            {
                "WorkerId": "W1",
                "AssignmentId": "A1",
                "BonusAmount": "1.50",
                "Reason": "Thanks",
                "UniqueRequestToken": "token-1",
            },
        )
    ]
    assert calls[0].action == "bonus.send"


def test_a_worker_is_qualified_with_value_1_and_no_notification(
    client: MTurkClient, market: ScriptedMTurk, calls: list[CallRecord]
) -> None:
    client.qualify(QUALIFICATION, "W1")

    assert [(seen.operation, seen.params) for seen in market.seen] == [
        (
            "AssociateQualificationWithWorker",
            {"QualificationTypeId": QUALIFICATION, "WorkerId": "W1", "IntegerValue": 1, "SendNotification": False},
        )
    ]
    assert calls[0].action == "list.add"


@pytest.mark.parametrize(
    ("operation", "method"),
    [
        ("GetAccountBalance", "get_account_balance"),
        ("ListAssignmentsForHIT", "list_assignments_for_hit"),
        ("AssociateQualificationWithWorker", "associate_qualification_with_worker"),
    ],
)
def test_an_operation_is_boto3s_snake_case_method(operation: str, method: str) -> None:
    assert _snake(operation) == method
