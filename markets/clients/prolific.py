"""Prolific's API v1 (https://api.prolific.com/api/v1/, docs.prolific.com/api-reference).

Requests carry `Authorization: Token <token>`. What this client uses, as documented:
- GET  users/me/                                  who the token belongs to (the connection test)
- GET  studies/{id}/                              the study (the connection test)
- GET  studies/{id}/submissions/                  its submissions (paged by `_links.next.href`)
- GET  submissions/{id}/                          one submission (its participant_id and study_id)
- POST submissions/bulk-approve/                  {"study_id", "participant_ids"}
- POST submissions/{id}/transition/               {"action": "REJECT", "message", "rejection_category"}
- POST submissions/bonus-payments/                {"study_id", "csv_bonuses": "pid,1.50\\n..."} -> {"id", ...}
- POST bulk-bonus-payments/{id}/pay/              pays a created bulk bonus (NOT idempotent)
- POST participant-groups/{id}/participants/      {"participant_ids"}: add to a participant group
A 429 is waited out once per request as its Retry-After asks (up to MARKET_RETRY_WAIT_MAX_SECONDS).
"""

import json
import time
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings

from ..ids import BadMarketId, participant_id, path_token, prolific_id
from . import ANSWER_KEPT_CHARS, CallRecord, MarketError, MarketTimeout, MarketUnreachable, Recorder, no_record

RATE_LIMIT_RETRIES = 3


def _detail(body: Any, text: str) -> str:
    """The one-line reason in an error answer: Prolific answers {"error": {"detail"|"title"...}}."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            for key in ("detail", "title", "message", "non_field_errors"):
                value = error.get(key)
                if value:
                    return value if isinstance(value, str) else json.dumps(value)[:200]
            return json.dumps(error)[:200]
        if isinstance(error, str):
            return error
    return text[:200] or "no details given"


class ProlificClient:
    def __init__(
        self,
        token: str,
        *,
        base_url: str | None = None,
        record: Recorder = no_record,
        timeout: float | None = None,
        patient: bool = True,
    ):
        """`timeout`: seconds to wait for an answer (MARKET_TIMEOUT_SECONDS unless given); an
        impatient client (`patient` False: a participant is waiting) never waits out a 429."""
        self.token = token
        self.base_url = (base_url or settings.PROLIFIC_API_URL).rstrip("/") + "/"
        self.record = record
        self.timeout = float(timeout if timeout is not None else settings.MARKET_TIMEOUT_SECONDS)
        self.patient = patient
        self.session = requests.Session()

    def _url(self, path: str) -> str:
        return urljoin(self.base_url, path.lstrip("/"))

    def request(self, method: str, path: str, action: str, payload: Any = None) -> Any:
        url = path if path.startswith("http") else self._url(path)
        if urlsplit(url).netloc != urlsplit(self.base_url).netloc:
            raise MarketError("Prolific's answer pointed at another host; it was not followed.")
        summary = f"{method} {urlsplit(url).path}" + (f" {json.dumps(payload)[:1500]}" if payload is not None else "")
        for attempt in range(RATE_LIMIT_RETRIES):
            started = time.monotonic()
            entry = CallRecord(action=action, request_summary=summary)
            try:
                response = self.session.request(
                    method,
                    url,
                    json=payload,
                    headers={"Authorization": f"Token {self.token}", "Accept": "application/json"},
                    timeout=self.timeout,
                    allow_redirects=False,
                )
            except requests.Timeout as error:
                entry.error = f"No answer from Prolific within {self.timeout:g} s."
                entry.duration_ms = int((time.monotonic() - started) * 1000)
                self.record(entry)
                raise MarketTimeout(entry.error) from error
            except requests.RequestException as error:
                entry.error = f"Prolific could not be reached ({type(error).__name__})."
                entry.duration_ms = int((time.monotonic() - started) * 1000)
                self.record(entry)
                raise MarketUnreachable(entry.error) from error
            entry.duration_ms = int((time.monotonic() - started) * 1000)
            entry.status_code = response.status_code
            entry.answer = response.text[:ANSWER_KEPT_CHARS]
            try:
                body = response.json() if response.content else None
            except ValueError:
                body = None
            if response.status_code == 429:
                wait = _retry_after(response)
                entry.error = f"Prolific's rate limit (429); retry after {wait:g} s."
                self.record(entry)
                if (
                    not self.patient
                    or wait > settings.MARKET_RETRY_WAIT_MAX_SECONDS
                    or attempt == RATE_LIMIT_RETRIES - 1
                ):
                    raise MarketError(f"Prolific's rate limit: try again in {wait:g} s.", status=429)
                time.sleep(wait)
                continue
            if response.status_code >= 400:
                entry.error = _message(response.status_code, _detail(body, response.text))
                self.record(entry)
                raise MarketError(entry.error, status=response.status_code)
            entry.ok = True
            self.record(entry)
            return body
        raise MarketError("Prolific's rate limit: try again later.", status=429)  # pragma: no cover

    # --- reads ---

    # Every id is checked before it is put in a request (markets.ids): an id is data, never a path.

    def me(self) -> dict[str, Any]:
        return self.request("GET", "users/me/", "test.me") or {}

    def study(self, study_id: str) -> dict[str, Any]:
        return self.request("GET", f"studies/{_study(study_id)}/", "test.study") or {}

    def submissions(self, study_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        page: str | None = f"studies/{_study(study_id)}/submissions/"
        while page:
            body = self.request("GET", page, "submissions.list") or {}
            found.extend(row for row in body.get("results", []) if isinstance(row, dict))
            following = ((body.get("_links") or {}).get("next") or {}).get("href")
            page = following if isinstance(following, str) and following else None
        return found

    def submission(self, submission_id: str) -> dict[str, Any]:
        """One submission as Prolific records it (whose it is: participant_id; where: study_id)."""
        body = self.request("GET", f"submissions/{_token(submission_id, 'The submission id')}/", "submission.get")
        return body if isinstance(body, dict) else {}

    # --- writes ---

    def approve(self, study_id: str, participant_ids: list[str]) -> Any:
        return self.request(
            "POST",
            "submissions/bulk-approve/",
            "approve",
            {"study_id": _study(study_id), "participant_ids": _participants(participant_ids)},
        )

    def reject(self, submission_id: str, message: str, category: str) -> Any:
        return self.request(
            "POST",
            f"submissions/{_token(submission_id, 'The submission id')}/transition/",
            "reject",
            {"action": "REJECT", "message": message, "rejection_category": category},
        )

    def create_bonuses(self, study_id: str, csv_bonuses: str) -> dict[str, Any]:
        body = self.request(
            "POST",
            "submissions/bonus-payments/",
            "bonus.create",
            {"study_id": _study(study_id), "csv_bonuses": csv_bonuses},
        )
        if not isinstance(body, dict) or not body.get("id"):
            raise MarketError("Prolific created no bulk bonus (its answer has no id).")
        return body

    def pay_bonuses(self, bulk_id: str) -> Any:
        return self.request("POST", f"bulk-bonus-payments/{_token(bulk_id, 'The bulk bonus id')}/pay/", "bonus.pay")

    def add_to_group(self, group_id: str, participant_ids: list[str]) -> Any:
        return self.request(
            "POST",
            f"participant-groups/{_checked(prolific_id, group_id, 'The participant group id')}/participants/",
            "list.add",
            {"participant_ids": _participants(participant_ids)},
        )


def _checked(check: Any, value: str, what: str) -> str:
    try:
        return str(check(value, what))
    except BadMarketId as error:
        raise MarketError(str(error)) from error


def _study(study_id: str) -> str:
    return _checked(prolific_id, study_id, "The Prolific study id")


def _token(value: str, what: str) -> str:
    return _checked(path_token, value, what)


def _participants(ids: list[str]) -> list[str]:
    return [_checked(participant_id, value, "The participant's id") for value in ids]


def _retry_after(response: requests.Response) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


def _message(status: int, detail: str) -> str:
    if status in (401, 403):
        return f"Prolific refused the API token ({status}): {detail}"
    if status == 404:
        return f"Prolific does not know this (404): {detail}"
    if status >= 500:
        return f"Prolific had an error ({status}): {detail}"
    return f"Prolific refused the request ({status}): {detail}"
