"""A GPU node's line to the platform: the node API over HTTP with a node token, no database.

`HttpReporter` is the RunReporter of a node that shares nothing with the platform but the network
(settings PLATFORM_URL and NODE_TOKEN): it leases runs, fetches snapshots into its
SnapshotCache, sends heartbeats, the checkpoint and the result or failure. Plain Python (stdlib
urllib, no Django, no torch).
"""

import hashlib
import http.client
import json
import logging
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from .runner import RunReporter, RunSpec
from .snapshot_cache import SnapshotCache

logger = logging.getLogger(__name__)

AUTH_SCHEME = "Worker"
CHUNK = 1 << 20
# What a flaky network may throw at us mid-transfer; anything else is a real error.
TRANSIENT = (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError)
# The lease id each (run, attempt) of this process got, for `fail_attempt`: the platform takes a
# node's failure only with the lease id, never for "whichever lease this attempt holds".
_leases: dict[tuple[int, str], str] = {}


class PlatformError(Exception):
    """The platform refused a request (4xx other than a lost lease) or stayed unreachable."""


class NotHolder(Exception):
    """409: the run is no longer this attempt's."""


class PlatformClient:
    def __init__(self, base_url, token, timeout=60.0, retries=4, backoff=1.0):
        if not base_url or not token:
            raise PlatformError("a GPU node needs PLATFORM_URL and NODE_TOKEN to reach the platform")
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff

    def url(self, path):
        return f"{self.base_url}/{path.lstrip('/')}"

    def _request(self, method, path, body=None, headers=None):
        request = urllib.request.Request(self.url(path), data=body, method=method)
        request.add_header("Authorization", f"{AUTH_SCHEME} {self.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        return urllib.request.urlopen(request, timeout=self.timeout)

    def call(self, method, path, payload=None, retries=None):
        """JSON in, JSON out; retried on network errors and 5xx; NotHolder on 409."""
        body = json.dumps(payload).encode() if payload is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        return self._with_retries(lambda: self._json(method, path, body, headers), retries)

    def _json(self, method, path, body, headers):
        try:
            with self._request(method, path, body, headers) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise self._http_error(error, path) from None

    def _http_error(self, error, path):
        try:
            detail = json.loads(error.read() or b"{}")
        except (ValueError, OSError):
            detail = {}
        if error.code == 409:
            return NotHolder(detail.get("detail") or f"{path}: the run is no longer this attempt's")
        if error.code >= 500:
            return urllib.error.URLError(f"{error.code} from the platform")  # transient: retried
        message = detail.get("detail") if isinstance(detail, dict) else None
        return PlatformError(f"{error.code} on {path}: {message or detail or error.reason}")

    def _with_retries(self, action, retries=None):
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

    def download(self, path, part_path):
        """Bring a file into `part_path`, resuming (HTTP Range) from what is already there; bytes received."""
        part_path = Path(part_path)
        received = 0

        def attempt():
            nonlocal received
            start = part_path.stat().st_size if part_path.exists() else 0
            headers = {"Range": f"bytes={start}-"} if start else {}
            try:
                response = self._request("GET", path, headers=headers)
            except urllib.error.HTTPError as error:
                if error.code == 416 and start:
                    part_path.unlink()  # longer than the file: start over
                    raise urllib.error.URLError("range not satisfiable; starting over") from None
                raise self._http_error(error, path) from None
            with response:
                # 200 to a Range request: the server sends it all, so start the file over.
                mode = "ab" if start and response.status == 206 else "wb"
                with open(part_path, mode) as handle:
                    for chunk in iter(lambda: response.read(CHUNK), b""):
                        handle.write(chunk)
                        received += len(chunk)
                expected = response.headers.get("Content-Length")
            if expected is not None and part_path.stat().st_size < (start if mode == "ab" else 0) + int(expected):
                raise http.client.IncompleteRead(b"", int(expected))

        self._with_retries(attempt)
        return received

    def upload(self, path, file_path, headers):
        """PUT a file as the request body, streamed; the JSON answer."""
        file_path = Path(file_path)
        size = file_path.stat().st_size

        def attempt():
            with open(file_path, "rb") as body:
                return self._json(
                    "PUT",
                    path,
                    body,
                    dict(headers, **{"Content-Type": "application/octet-stream", "Content-Length": str(size)}),
                )

        return self._with_retries(attempt)


class HttpReporter(RunReporter):
    def __init__(self, client, cache):
        self.client = client
        self.cache = cache

    @classmethod
    def from_settings(
        cls, platform_url: str, token: str, cache_dir: str | Path, cache_max_bytes: int
    ) -> "HttpReporter":
        return cls(PlatformClient(platform_url, token), SnapshotCache(cache_dir, cache_max_bytes))

    def lease(self, run_id, hostname, attempt):
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

    def snapshot_folder(self, spec):
        def fetch(name, part_path):
            return self.client.download(f"api/snapshots/{spec.snapshot_id}/files/{urllib.parse.quote(name)}", part_path)

        folder, report = self.cache.get(spec.snapshot_hash, fetch)
        spec.snapshot_source = report
        return folder

    def snapshot_rejected(self, spec):
        self.cache.discard(spec.snapshot_hash)

    def _held(self, spec):
        return {"attempt": spec.attempt, "claim": spec.lease_id}

    def progress(self, spec, fields):
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

    def save_checkpoint(self, spec, path):
        sha = _sha256(path)
        try:
            self.client.upload(
                f"api/worker/runs/{spec.run_id}/checkpoint/",
                path,
                {"X-Attempt": spec.attempt, "X-Claim": spec.lease_id, "X-Content-SHA256": sha},
            )
        except NotHolder:
            return False
        return True

    def finish(self, spec, results):
        _leases.pop((spec.run_id, spec.attempt), None)
        try:
            self.client.call(
                "POST", f"api/worker/runs/{spec.run_id}/finish/", dict(self._held(spec), results=results), retries=8
            )
        except NotHolder as refused:
            logger.warning("run %s: result not recorded: %s", spec.run_id, refused)
            return False
        return True

    def fail(self, spec, error):
        _leases.pop((spec.run_id, spec.attempt), None)
        try:
            self.client.call(
                "POST", f"api/worker/runs/{spec.run_id}/fail/", dict(self._held(spec), error=error), retries=8
            )
        except NotHolder as refused:
            logger.warning("run %s: failure not recorded: %s", spec.run_id, refused)
            return False
        return True

    def fail_attempt(self, run_id, attempt, error):
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

    def status(self, run_id):
        try:
            return self.client.call("GET", f"api/worker/runs/{run_id}/")["status"]
        except (NotHolder, PlatformError):
            return None


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
