"""A STAND-IN for the crowd markets' APIs, for tests only: not Prolific, not Mechanical Turk.

The live markets cannot be reached from the test machines, so this small threaded http.server
implements the requests the markets app sends, as the published references document them, with
their answers and errors (docs/markets.md lists what it implements and what it assumes):

- Prolific API v1 under /api/v1/: `Authorization: Token <token>`; users/me/, studies/{id}/,
  studies/{id}/submissions/ (each with `bonus_payments`, the participant's bonuses in cents),
  submissions/{id}/ (one submission: whose, which study),
  submissions/bulk-approve/, submissions/{id}/transition/, submissions/bonus-payments/ (step one:
  creates a bulk bonus, pays nothing), bulk-bonus-payments/{id}/pay/ (step two: pays, and, as
  Prolific warns, pays AGAIN if called again), participant-groups/{id}/participants/.
- MTurk's JSON protocol under /mturk (what boto3 sends: `X-Amz-Target:
  MTurkRequesterServiceV20170117.<Operation>`): GetAccountBalance, ApproveAssignment,
  RejectAssignment, SendBonus (one bonus per UniqueRequestToken; a second is a RequestError),
  ListBonusPayments, ListAssignmentsForHIT, AssociateQualificationWithWorker.

Faults are queued per operation (`fail(operation, kind)`): "429" (a rate limit with Retry-After),
"400" (a validation error naming a field, nothing done: Prolific's 400, MTurk's RequestError),
"500", "500-after" (do the operation, then answer 500: the market acted and said it failed),
"409-after" (do the operation, then answer 409 Conflict), "reset-after" (do the operation, then
drop the connection without an answer), "slow-after" (do the operation, then answer after
`slow_seconds`: the client times out though the market acted), "slow-before" (answer late
without acting). With `record_lags` set, money
paid is not listed yet (Prolific's `bonus_payments`, MTurk's ListBonusPayments) until `publish()`:
the markets pay "in the following minutes" and their records follow. `before_answer[operation]`
is called after the operation is done and before the answer is written (the kill test holds a
lock there).
"""

import csv
import io
import json
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from decimal import Decimal
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MTURK_TARGET = "MTurkRequesterServiceV20170117."
# The status `_run` gives a request whose connection is dropped without an answer ("reset-after").
DROPPED = 0


class MarketStandIn:
    """The stand-in's state: one Prolific workspace and one MTurk requester account."""

    def __init__(
        self,
        *,
        prolific_token="standin-prolific-token",
        mturk_key="AKIASTANDIN",
        study_id="5fa0000000000000000000a1",
        slow_seconds=3.0,
    ):
        self.prolific_token = prolific_token
        self.mturk_key = mturk_key
        self.study_id = study_id
        self.study_name = "Stand-in study"
        self.slow_seconds = slow_seconds
        self.lock = threading.Lock()
        # Prolific: submission id -> {"participant_id", "status", "bonus_payments": [cents]}
        self.submissions: dict[str, dict[str, Any]] = {}
        self.bulk_bonuses: dict[str, dict[str, Any]] = {}
        # Bulk bonus ids are `<bulk_prefix><n>`: a stand-in started again on a database that keeps
        # the earlier one's ids (the attack suite's) gives itself a prefix of its own.
        self.bulk_prefix = "bulk-"
        self.bulk_pay_calls: list[str] = []
        self.groups: dict[str, set[str]] = defaultdict(set)
        # Money paid but not in the market's record yet (record_lags): participant id -> [cents].
        self.record_lags = False
        self.unlisted_cents: dict[str, list[int]] = defaultdict(list)
        # MTurk
        self.assignments: dict[str, dict[str, Any]] = {}
        self.bonuses_sent: list[dict[str, Any]] = []
        self.tokens: set[str] = set()
        self.qualified: dict[str, set[str]] = defaultdict(set)
        self.faults: dict[str, list[str]] = defaultdict(list)
        self.before_answer: dict[str, Callable[[], None]] = {}
        self.requests: list[tuple[str, str]] = []
        self.server: ThreadingHTTPServer | None = None

    # --- setting the scene -----------------------------------------------------------------

    def add_submission(self, submission_id: str, participant_id: str, status: str = "AWAITING REVIEW") -> None:
        self.submissions[submission_id] = {"participant_id": participant_id, "status": status, "bonus_payments": []}

    def add_assignment(self, assignment_id: str, worker_id: str, hit_id: str, status: str = "Submitted") -> None:
        self.assignments[assignment_id] = {"WorkerId": worker_id, "HITId": hit_id, "AssignmentStatus": status}

    def fail(self, operation: str, kind: str, times: int = 1) -> None:
        self.faults[operation].extend([kind] * times)

    def prolific_paid_cents(self) -> dict[str, int]:
        """What each participant was really paid, listed in the record or not yet."""
        totals: dict[str, int] = defaultdict(int)
        for row in self.submissions.values():
            totals[row["participant_id"]] += sum(row["bonus_payments"])
        for pid, cents in self.unlisted_cents.items():
            totals[pid] += sum(cents)
        return dict(totals)

    def publish(self) -> None:
        """The markets' records catch up with the money they paid."""
        with self.lock:
            for pid, cents in self.unlisted_cents.items():
                self._by_participant(pid)["bonus_payments"].extend(cents)
            self.unlisted_cents.clear()
            for row in self.bonuses_sent:
                row["Listed"] = True

    def mturk_paid(self) -> dict[str, Decimal]:
        totals: dict[str, Decimal] = defaultdict(Decimal)
        for row in self.bonuses_sent:
            totals[row["WorkerId"]] += Decimal(row["BonusAmount"])
        return dict(totals)

    # --- serving ---------------------------------------------------------------------------

    def start(self, port: int = 0) -> "MarketStandIn":
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                standin._handle(self, "GET")

            def do_POST(self):
                standin._handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        if handler.path.startswith("/mturk"):
            operation = (handler.headers.get("X-Amz-Target") or "").removeprefix(MTURK_TARGET)
            status, body, headers = self._mturk(handler, operation, raw)
            content_type = "application/x-amz-json-1.1"
        else:
            operation, status, body, headers = self._prolific(handler, method, raw)
            content_type = "application/json"
        if status == DROPPED:
            handler.close_connection = True
            return
        data = json.dumps(body).encode() if body is not None else b""
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("x-amzn-RequestId", "standin-request")
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        try:
            handler.wfile.write(data)
            handler.wfile.flush()
        except OSError:
            pass  # the client gave up waiting (a time-out): the market acted all the same

    def _fault(self, operation: str) -> str | None:
        with self.lock:
            self.requests.append(("fault?", operation))
            return self.faults[operation].pop(0) if self.faults[operation] else None

    def _run(self, operation: str, action: Callable[[], tuple[int, Any]]) -> tuple[int, Any, dict[str, str]]:
        fault = self._fault(operation)
        if fault == "429":
            return (
                429,
                {"error": {"detail": "Request was throttled."}, "__type": "ThrottlingException"},
                {"Retry-After": "0"},
            )
        if fault == "500":
            return 500, {"error": {"detail": "Internal error."}, "__type": "ServiceFault", "Message": "Internal"}, {}
        if fault == "400":
            body = {
                "error": {"status": 400, "title": "Invalid request", "detail": {"amount": ["Insufficient balance."]}},
                "__type": "RequestError",
                "Message": "BonusAmount is out of bounds.",
            }
            return 400, body, {}
        if fault == "slow-before":
            time.sleep(self.slow_seconds)
            return 500, {"error": {"detail": "gave up"}}, {}
        with self.lock:
            status, body = action()
        if fault == "500-after":
            return 500, {"error": {"detail": "Internal error."}, "__type": "ServiceFault", "Message": "Internal"}, {}
        if fault == "409-after":
            return 409, {"error": {"detail": "Conflict."}, "__type": "ConflictException", "Message": "Conflict"}, {}
        if fault == "reset-after":
            return DROPPED, None, {}
        if operation in self.before_answer:
            self.before_answer[operation]()
        if fault == "slow-after":
            time.sleep(self.slow_seconds)
        return status, body, {}

    # --- Prolific ---------------------------------------------------------------------------

    def _prolific(self, handler, method, raw) -> tuple[str, int, Any, dict[str, str]]:
        path = handler.path.split("?")[0]
        with self.lock:
            self.requests.append((method, path))
        if handler.headers.get("Authorization") != f"Token {self.prolific_token}":
            return "auth", 401, {"error": {"status": 401, "detail": "Invalid token."}}, {}
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            return "bad", 400, {"error": {"detail": "JSON parse error."}}, {}
        routes: list[tuple[str, str, Callable[..., tuple[int, Any]]]] = [
            ("GET", r"/api/v1/users/me/", lambda: (200, {"id": "standin-user", "email": "researcher@example.org"})),
            ("GET", r"/api/v1/studies/(?P<sid>[^/]+)/", self._study),
            ("GET", r"/api/v1/studies/(?P<sid>[^/]+)/submissions/", self._submissions),
            ("GET", r"/api/v1/submissions/(?P<sub>[^/]+)/", self._submission),
            ("POST", r"/api/v1/submissions/bulk-approve/", lambda: self._bulk_approve(payload)),
            ("POST", r"/api/v1/submissions/(?P<sub>[^/]+)/transition/", lambda sub: self._transition(sub, payload)),
            ("POST", r"/api/v1/submissions/bonus-payments/", lambda: self._create_bonuses(payload)),
            ("POST", r"/api/v1/bulk-bonus-payments/(?P<bulk>[^/]+)/pay/", self._pay_bonuses),
            (
                "POST",
                r"/api/v1/participant-groups/(?P<group>[^/]+)/participants/",
                lambda group: self._group(group, payload),
            ),
        ]
        for verb, pattern, action in routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                operation = _prolific_operation(method, path)
                found: dict[str, str] = match.groupdict()
                status, body, headers = self._run(operation, partial(action, **found))
                return operation, status, body, headers
        return "none", 404, {"error": {"detail": "Not found."}}, {}

    def _study(self, sid):
        if sid != self.study_id:
            return 404, {"error": {"detail": "Study not found."}}
        return 200, {"id": sid, "name": self.study_name, "status": "ACTIVE"}

    def _submissions(self, sid):
        if sid != self.study_id:
            return 404, {"error": {"detail": "Study not found."}}
        results = [{"id": key, "study_id": sid, **dict(row)} for key, row in self.submissions.items()]
        return 200, {"results": results, "_links": {"next": {"href": None}}}

    def _submission(self, sub):
        row = self.submissions.get(sub)
        if row is None:
            return 404, {"error": {"detail": "Submission not found."}}
        return 200, {"id": sub, "study_id": self.study_id, **dict(row)}

    def _by_participant(self, participant_id):
        return next((row for row in self.submissions.values() if row["participant_id"] == participant_id), None)

    def _bulk_approve(self, payload):
        if payload.get("study_id") != self.study_id:
            return 400, {"error": {"detail": "Unknown study_id."}}
        unknown = [pid for pid in payload.get("participant_ids", []) if self._by_participant(pid) is None]
        if unknown:
            return 400, {"error": {"detail": f"Participants not in the study: {', '.join(unknown)}"}}
        for pid in payload.get("participant_ids", []):
            self._by_participant(pid)["status"] = "APPROVED"
        return 200, ""

    def _transition(self, sub, payload):
        row = self.submissions.get(sub)
        if row is None:
            return 404, {"error": {"detail": "Submission not found."}}
        if payload.get("action") == "REJECT":
            if not payload.get("message") or not payload.get("rejection_category"):
                return 400, {"error": {"detail": "A rejection needs a message and a rejection_category."}}
            row["status"] = "REJECTED"
        elif payload.get("action") == "APPROVE":
            row["status"] = "APPROVED"
        else:
            return 400, {"error": {"detail": "Unknown action."}}
        return 200, {"id": sub, "status": row["status"]}

    def _create_bonuses(self, payload):
        if payload.get("study_id") != self.study_id:
            return 400, {"error": {"detail": "Unknown study_id."}}
        lines = {}
        for row in csv.reader(io.StringIO(payload.get("csv_bonuses", ""))):
            if not row:
                continue
            if len(row) != 2 or self._by_participant(row[0]) is None:
                return 400, {"error": {"detail": f"Incorrect id in csv_bonuses: {row[0] if row else ''}"}}
            lines[row[0]] = int(Decimal(row[1]) * 100)
        bulk_id = f"{self.bulk_prefix}{len(self.bulk_bonuses) + 1}"
        self.bulk_bonuses[bulk_id] = {"lines": lines, "pay_calls": 0}
        total = sum(lines.values())
        return 201, {"id": bulk_id, "study": self.study_id, "amount": total, "fees": 0, "total_amount": total}

    def _pay_bonuses(self, bulk):
        bonus = self.bulk_bonuses.get(bulk)
        if bonus is None:
            return 404, {"error": {"detail": "Bulk bonus payment not found."}}
        # As Prolific documents: NOT idempotent. Every call pays every line again.
        bonus["pay_calls"] += 1
        self.bulk_pay_calls.append(bulk)
        for pid, cents in bonus["lines"].items():
            if self.record_lags:
                self.unlisted_cents[pid].append(cents)
            else:
                self._by_participant(pid)["bonus_payments"].append(cents)
        return 202, {}

    def _group(self, group, payload):
        self.groups[group].update(payload.get("participant_ids", []))
        return 200, {"id": group}

    # --- MTurk ------------------------------------------------------------------------------

    def _mturk(self, handler, operation, raw) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            self.requests.append(("MTURK", operation))
        if f"Credential={self.mturk_key}/" not in (handler.headers.get("Authorization") or ""):
            return 400, {"__type": "UnrecognizedClientException", "Message": "The security token is invalid."}, {}
        try:
            params = json.loads(raw) if raw else {}
        except ValueError:
            return 400, {"__type": "SerializationException", "Message": "Bad JSON"}, {}
        actions: dict[str, Callable[[], tuple[int, Any]]] = {
            "GetAccountBalance": lambda: (200, {"AvailableBalance": "10000.00"}),
            "ApproveAssignment": lambda: self._set_assignment(params, "Approved"),
            "RejectAssignment": lambda: self._set_assignment(params, "Rejected"),
            "SendBonus": lambda: self._send_bonus(params),
            "ListBonusPayments": lambda: self._list_bonuses(params),
            "ListAssignmentsForHIT": lambda: self._list_assignments(params),
            "AssociateQualificationWithWorker": lambda: self._qualify(params),
        }
        if operation not in actions:
            return 400, {"__type": "UnknownOperationException", "Message": operation}, {}
        status, body, headers = self._run(operation, actions[operation])
        if status in (DROPPED, 400, 409):
            return status, body, headers
        if status == 429:
            return 400, {"__type": "ThrottlingException", "Message": "Rate exceeded"}, {}
        if status == 500:
            return 500, {"__type": "ServiceFault", "Message": "Internal error"}, {}
        return status, body, headers

    def _request_error(self, message):
        return 400, {"__type": "RequestError", "Message": message}

    def _set_assignment(self, params, status):
        row = self.assignments.get(params.get("AssignmentId", ""))
        if row is None:
            return self._request_error("Assignment does not exist.")
        if status == "Rejected" and not params.get("RequesterFeedback"):
            return self._request_error("RequesterFeedback is required to reject.")
        row["AssignmentStatus"] = status
        return 200, {}

    def _send_bonus(self, params):
        token = params.get("UniqueRequestToken", "")
        if token and token in self.tokens:
            return self._request_error(f"The UniqueRequestToken {token} has already been used.")
        row = self.assignments.get(params.get("AssignmentId", ""))
        if row is None or row["WorkerId"] != params.get("WorkerId"):
            return self._request_error("Assignment and worker do not match.")
        if not params.get("Reason"):
            return self._request_error("Reason is required.")
        if token:
            self.tokens.add(token)
        self.bonuses_sent.append(
            {
                "WorkerId": params["WorkerId"],
                "AssignmentId": params["AssignmentId"],
                "BonusAmount": params["BonusAmount"],
                "Reason": params["Reason"],
                "GrantTime": time.time(),
                "Listed": not self.record_lags,
            }
        )
        return 200, {}

    def _list_bonuses(self, params):
        found = [
            {key: value for key, value in row.items() if key != "Listed"}
            for row in self.bonuses_sent
            if row["AssignmentId"] == params.get("AssignmentId") and row.get("Listed", True)
        ]
        return 200, {"NumResults": len(found), "BonusPayments": found}

    def _list_assignments(self, params):
        found = [
            {"AssignmentId": key, **row} for key, row in self.assignments.items() if row["HITId"] == params.get("HITId")
        ]
        wanted = params.get("AssignmentStatuses")
        if wanted:
            found = [row for row in found if row["AssignmentStatus"] in wanted]
        return 200, {"NumResults": len(found), "Assignments": found}

    def _qualify(self, params):
        self.qualified[params.get("QualificationTypeId", "")].add(params.get("WorkerId", ""))
        return 200, {}


def _prolific_operation(method: str, path: str) -> str:
    """A short name per Prolific route, for faults and hooks."""
    if path.endswith("/pay/"):
        return "bonus.pay"
    if path.endswith("/bonus-payments/"):
        return "bonus.create"
    if path.endswith("/bulk-approve/"):
        return "approve"
    if path.endswith("/transition/"):
        return "reject"
    if path.endswith("/submissions/"):
        return "submissions.list"
    if method == "GET" and "/submissions/" in path:
        return "submission.get"
    if "/participant-groups/" in path:
        return "list.add"
    return f"{method} {path}"
