"""A GPU node's line to the platform: the node API over HTTP with a node token, no database.

`HttpReporter` is the RunReporter of a node that shares nothing with the platform but the network
(PLATFORM_URL and NODE_TOKEN). Plain Python (stdlib urllib, no Django, no torch).
"""

import http.client
import json
import logging
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from http.client import HTTPResponse
from pathlib import Path
from typing import IO, Any, TypeVar

from modeling.snapshots.format import sha256_of_file

from .runner import RunReporter, RunSpec
from .snapshot_cache import SnapshotCache

logger = logging.getLogger(__name__)
T = TypeVar("T")

AUTH_SCHEME = "Worker"
RUN_PATH = "api/worker/runs/"
CHUNK = 1 << 20
# What a flaky network may throw at us mid-transfer; anything else is a real error.
TRANSIENT = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError)
# The lease id each (run, attempt) of this process got, for `fail_attempt`: the platform takes a
# node's failure only with the lease id, never for "whichever lease this attempt holds".
_leases: dict[tuple[int, str], str] = {}


class PlatformError(Exception):
    """The platform refused a request (4xx other than a lost lease) or stayed unreachable."""


class NotHolder(Exception):
    """409 (or 404 on a run): the run is no longer this attempt's."""


class PlatformClient:
    def __init__(
        self, base_url: str, token: str, timeout: float = 60.0, retries: int = 4, backoff: float = 1.0
    ) -> None:
        if not base_url or not token:
            raise PlatformError("a GPU node needs PLATFORM_URL and NODE_TOKEN to reach the platform")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    def url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def _request(
        self, method: str, path: str, body: bytes | IO[bytes] | None = None, headers: Mapping[str, str] | None = None
    ) -> HTTPResponse:
        request = urllib.request.Request(self.url(path), data=body, method=method)
        request.add_header("Authorization", f"{AUTH_SCHEME} {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        response: HTTPResponse = urllib.request.urlopen(request, timeout=self.timeout)  # http(s): an HTTPResponse
        return response

    def call(self, method: str, path: str, payload: object = None, retries: int | None = None) -> Any:
        """JSON in, JSON out; retried on network errors and 5xx; NotHolder on 409."""
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        return self._with_retries(lambda: self._json(method, path, body, headers), retries)

    def _json(self, method: str, path: str, body: bytes | IO[bytes] | None, headers: Mapping[str, str]) -> Any:
        try:
            with self._request(method, path, body, headers) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise self._http_error(error, path) from None

    def _http_error(self, error: urllib.error.HTTPError, path: str) -> Exception:
        try:
            detail = json.loads(error.read() or b"{}")
        except (ValueError, OSError):
            detail = {}
        # 404 on a run: the platform knows no such run for this node token (another node leased
        # it after a requeue, or it is gone). Either way this node has nothing to do with it: stop.
        if error.code == 409 or (error.code == 404 and path.startswith(RUN_PATH)):
            message = detail.get("detail") if isinstance(detail, dict) else None
            return NotHolder(message or f"{path}: the run is no longer this attempt's")
        if error.code >= 500:
            return urllib.error.URLError(f"{error.code} from the platform")  # transient: retried
        message = detail.get("detail") if isinstance(detail, dict) else None
        return PlatformError(f"{error.code} on {path}: {message or detail or error.reason}")

    def _with_retries(self, action: Callable[[], T], retries: int | None = None) -> T:
        retries = self.retries if retries is None else retries
        for attempt in range(retries + 1):
            try:
                return action()
            except TRANSIENT as error:
                if attempt == retries:
                    raise PlatformError(f"the platform at {self.base_url} is unreachable: {error}") from error
                wait = self.backoff * 2**attempt
                logger.warning("platform unreachable (%s); retrying in %.1f s", error, wait)
                time.sleep(wait)
        raise AssertionError("unreachable: the last try returns or raises")

    def download(self, path: str, part_path: str | Path) -> int:
        """Bring a file into `part_path`, resuming (HTTP Range) from what is already there; bytes received."""
        part = Path(part_path)
        received = 0

        def attempt() -> None:
            nonlocal received
            start = part.stat().st_size if part.exists() else 0
            headers = {"Range": f"bytes={start}-"} if start else {}
            try:
                response = self._request("GET", path, headers=headers)
            except urllib.error.HTTPError as error:
                if error.code == 416 and start:
                    part.unlink()  # longer than the file: start over
                    raise urllib.error.URLError("range not satisfiable; starting over") from None
                raise self._http_error(error, path) from None
            with response:
                # 200 to a Range request: the server sends it all, so start the file over.
                mode = "ab" if start and response.status == 206 else "wb"
                with open(part, mode) as handle:
                    for chunk in iter(lambda: response.read(CHUNK), b""):
                        handle.write(chunk)
                        received += len(chunk)
                expected = response.headers.get("Content-Length")
            if expected is not None and part.stat().st_size < (start if mode == "ab" else 0) + int(expected):
                raise http.client.IncompleteRead(b"", int(expected))

        self._with_retries(attempt)
        return received

    def upload(self, path: str, file_path: str | Path, headers: Mapping[str, str]) -> Any:
        """PUT a file as the request body, streamed; the JSON answer."""
        size = Path(file_path).stat().st_size

        def attempt() -> Any:
            with open(file_path, "rb") as body:
                return self._json(
                    "PUT",
                    path,
                    body,
                    dict(headers, **{"Content-Type": "application/octet-stream", "Content-Length": str(size)}),
                )

        return self._with_retries(attempt)


class HttpReporter(RunReporter):
    def __init__(self, client: PlatformClient, cache: SnapshotCache) -> None:
        self.client = client
        self.cache = cache

    def lease(self, run_id: int, hostname: str, attempt: str | None) -> RunSpec | None:
        try:
            answer = self.client.call(
                "POST", f"api/worker/runs/{run_id}/claim/", {"attempt": attempt or "", "hostname": hostname}
            )
        except NotHolder as refused:
            logger.warning("run %s: %s", run_id, refused)
            return None
        spec = RunSpec(
            run_id=answer["id"],
            attempt=answer["attempt"],
            lease_id=answer["claim"],
            model=answer["model"],
            config=answer["config"],
            snapshot_id=answer["snapshot"],
            snapshot_hash=answer["snapshot_hash"],
            restarts=answer.get("restarts", 0),
        )
        _leases[(spec.run_id, spec.attempt)] = spec.lease_id
        return spec

    def snapshot_folder(self, spec: RunSpec) -> Path:
        def fetch(name: str, part_path: Path) -> int:
            return self.client.download(f"api/snapshots/{spec.snapshot_id}/files/{urllib.parse.quote(name)}", part_path)

        folder, report = self.cache.get(spec.snapshot_hash, fetch)
        spec.snapshot_source = report
        return folder

    def snapshot_rejected(self, spec: RunSpec) -> None:
        self.cache.discard(spec.snapshot_hash)

    def _held(self, spec: RunSpec) -> dict[str, str]:
        return {"attempt": spec.attempt, "claim": spec.lease_id}

    def progress(self, spec: RunSpec, fields: Mapping[str, Any]) -> bool:
        try:
            self.client.call(
                "POST", f"api/worker/runs/{spec.run_id}/progress/", dict(self._held(spec), **fields), retries=2
            )
        except NotHolder:
            return False
        except PlatformError as error:
            # A heartbeat lost to the network is not a reason to stop training; a platform that
            # stays silent longer than TRAINING_STALE_MINUTES has the reaper fail or requeue the run.
            logger.warning("heartbeat of run %s not delivered: %s", spec.run_id, error)
        return True

    def save_checkpoint(self, spec: RunSpec, path: str | Path) -> bool:
        sha = sha256_of_file(path)
        try:
            self.client.upload(
                f"api/worker/runs/{spec.run_id}/checkpoint/",
                path,
                {"X-Attempt": spec.attempt, "X-Claim": spec.lease_id, "X-Content-SHA256": sha},
            )
        except NotHolder:
            return False
        return True

    def finish(self, spec: RunSpec, results: dict[str, Any]) -> bool:
        return self._end(spec, "finish", {"results": results}, "result")

    def fail(self, spec: RunSpec, error: object) -> bool:
        return self._end(spec, "fail", {"error": error}, "failure")

    def _end(self, spec: RunSpec, verb: str, body: dict[str, Any], what: str) -> bool:
        _leases.pop((spec.run_id, spec.attempt), None)
        try:
            self.client.call("POST", f"api/worker/runs/{spec.run_id}/{verb}/", {**self._held(spec), **body}, retries=8)
        except NotHolder as refused:
            logger.warning("run %s: %s not recorded: %s", spec.run_id, what, refused)
            return False
        return True

    def fail_attempt(self, run_id: int, attempt: str, error: str) -> None:
        """Fail the lease this process took for the attempt (the task died outside execute_attempt)."""
        lease_id = _leases.pop((run_id, attempt), None)
        if lease_id is None:
            logger.warning(
                "run %s: no lease of attempt %s in this process; failure left to the reaper", run_id, attempt
            )
            return
        try:
            self.client.call(
                "POST",
                f"api/worker/runs/{run_id}/fail/",
                {"attempt": attempt, "claim": lease_id, "error": error},
                retries=1,
            )
        except (NotHolder, PlatformError) as refused:
            logger.warning("run %s: failure not recorded: %s", run_id, refused)

    def status(self, run_id: int) -> str | None:
        try:
            found: str | None = self.client.call("GET", f"api/worker/runs/{run_id}/")["status"]
            return found
        except (NotHolder, PlatformError):
            return None
