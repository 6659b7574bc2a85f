"""Mechanical Turk's requester API (2017-01-17) through boto3.

The sandbox or the live marketplace, or MTURK_ENDPOINT_URL when set (a stand-in in the tests).
What this client uses: GetAccountBalance (the connection test), ListAssignmentsForHIT (polling),
ApproveAssignment, RejectAssignment (RequesterFeedback is the reason), SendBonus (with a
UniqueRequestToken: MTurk refuses a second bonus under the same token), ListBonusPayments (the
record that a payment is reconciled against), AssociateQualificationWithWorker (lists).
boto3's own retries are off: a throttled call (429 / ThrottlingException) is retried here once
per wait, and a money call is never resent on a time-out.
"""

import json
import time
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from django.conf import settings

from ..ids import BadMarketId, mturk_type_id, participant_id
from . import ANSWER_KEPT_CHARS, CallRecord, MarketError, MarketTimeout, MarketUnreachable, Recorder, no_record

SANDBOX_URL = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
LIVE_URL = "https://mturk-requester.us-east-1.amazonaws.com"
THROTTLED = {"ThrottlingException", "Throttling", "TooManyRequestsException"}
RATE_LIMIT_RETRIES = 3


class MTurkClient:
    def __init__(self, access_key_id: str, secret_access_key: str, *, live: bool, record: Recorder = no_record):
        endpoint = settings.MTURK_ENDPOINT_URL or (LIVE_URL if live else SANDBOX_URL)
        self.record = record
        self.client = boto3.client(
            "mturk",
            region_name="us-east-1",
            endpoint_url=endpoint,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            config=Config(
                connect_timeout=settings.MARKET_TIMEOUT_SECONDS,
                read_timeout=settings.MARKET_TIMEOUT_SECONDS,
                retries={"total_max_attempts": 1},
            ),
        )

    def call(self, operation: str, action: str, **params: Any) -> dict[str, Any]:
        _check_ids(params)
        summary = f"{operation} {json.dumps(params, default=str)[:1500]}"
        for attempt in range(RATE_LIMIT_RETRIES):
            entry = CallRecord(action=action, request_summary=summary)
            started = time.monotonic()
            try:
                answer = getattr(self.client, _snake(operation))(**params)
            except (ReadTimeoutError, ConnectTimeoutError) as error:
                entry.error = f"No answer from MTurk within {settings.MARKET_TIMEOUT_SECONDS:g} s."
                entry.duration_ms = int((time.monotonic() - started) * 1000)
                self.record(entry)
                if isinstance(error, ConnectTimeoutError):
                    raise MarketUnreachable(entry.error) from error
                raise MarketTimeout(entry.error) from error
            except EndpointConnectionError as error:
                entry.error = "MTurk could not be reached."
                self.record(entry)
                raise MarketUnreachable(entry.error) from error
            except ClientError as error:
                entry.duration_ms = int((time.monotonic() - started) * 1000)
                meta = error.response.get("ResponseMetadata", {})
                code = error.response.get("Error", {}).get("Code", "")
                message = error.response.get("Error", {}).get("Message", "") or str(error)
                entry.status_code = meta.get("HTTPStatusCode")
                entry.answer = json.dumps(error.response.get("Error", {}))[:ANSWER_KEPT_CHARS]
                if code in THROTTLED or entry.status_code == 429:
                    entry.error = "MTurk's rate limit (throttled)."
                    self.record(entry)
                    if attempt < RATE_LIMIT_RETRIES - 1:
                        time.sleep(min(2.0**attempt, settings.MARKET_RETRY_WAIT_MAX_SECONDS))
                        continue
                    raise MarketError("MTurk's rate limit: try again in a minute.", status=429, code=code) from error
                entry.error = _message(code, message)
                self.record(entry)
                raise MarketError(entry.error, status=entry.status_code, code=code) from error
            except BotoCoreError as error:
                entry.error = f"MTurk call failed ({type(error).__name__})."
                self.record(entry)
                raise MarketError(entry.error) from error
            entry.duration_ms = int((time.monotonic() - started) * 1000)
            entry.status_code = answer.get("ResponseMetadata", {}).get("HTTPStatusCode")
            shown = {key: value for key, value in answer.items() if key != "ResponseMetadata"}
            entry.answer = json.dumps(shown, default=str)[:ANSWER_KEPT_CHARS]
            entry.ok = True
            self.record(entry)
            return dict(answer)
        raise MarketError("MTurk's rate limit: try again later.", status=429)  # pragma: no cover

    def balance(self) -> dict[str, Any]:
        return self.call("GetAccountBalance", "test.balance")

    def _every_page(self, operation: str, action: str, key: str, **params: Any) -> list[dict[str, Any]]:
        """The `key` items of every page of a listing (each answer's NextToken asks for the next)."""
        found: list[dict[str, Any]] = []
        while True:
            answer = self.call(operation, action, **params)
            found.extend(answer.get(key, []))
            if not answer.get("NextToken"):
                return found
            params["NextToken"] = answer["NextToken"]

    def assignments_for_hit(self, hit_id: str) -> list[dict[str, Any]]:
        statuses = ["Submitted", "Approved", "Rejected"]
        return self._every_page(
            "ListAssignmentsForHIT",
            "assignments.list",
            "Assignments",
            HITId=hit_id,
            MaxResults=100,
            AssignmentStatuses=statuses,
        )

    def approve(self, assignment_id: str, feedback: str = "") -> dict[str, Any]:
        params: dict[str, Any] = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = feedback[:1024]
        return self.call("ApproveAssignment", "approve", **params)

    def reject(self, assignment_id: str, reason: str) -> dict[str, Any]:
        return self.call("RejectAssignment", "reject", AssignmentId=assignment_id, RequesterFeedback=reason[:1024])

    def send_bonus(self, worker_id: str, assignment_id: str, amount: str, reason: str, token: str) -> dict[str, Any]:
        return self.call(
            "SendBonus",
            "bonus.send",
            WorkerId=worker_id,
            AssignmentId=assignment_id,
            BonusAmount=amount,
            Reason=reason,
            UniqueRequestToken=token,
        )

    def bonus_payments(self, assignment_id: str) -> list[dict[str, Any]]:
        return self._every_page(
            "ListBonusPayments", "bonus.list", "BonusPayments", AssignmentId=assignment_id, MaxResults=100
        )

    def qualify(self, qualification_type_id: str, worker_id: str) -> dict[str, Any]:
        return self.call(
            "AssociateQualificationWithWorker",
            "list.add",
            QualificationTypeId=qualification_type_id,
            WorkerId=worker_id,
            IntegerValue=1,
            SendNotification=False,
        )


def _check_ids(params: dict[str, Any]) -> None:
    """Every id sent to MTurk in its format (markets.ids), before the request: a qualification
    type as MTurk hands them out, a HIT, assignment or worker id as an arrival link may carry it."""
    for name, value in params.items():
        if not name.endswith("Id"):
            continue
        try:
            if name == "QualificationTypeId":
                mturk_type_id(value, "The qualification type id")
            else:
                participant_id(value, f"The {name}")
        except BadMarketId as error:
            raise MarketError(str(error)) from error


def _snake(operation: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(operation)).replace(
        "_h_i_t", "_hit"
    )


def _message(code: str, message: str) -> str:
    if code in {"UnrecognizedClientException", "InvalidClientTokenId", "SignatureDoesNotMatch", "AccessDenied"}:
        return f"MTurk refused the credentials ({code}): {message}"
    return f"MTurk refused the request ({code or 'error'}): {message}"
