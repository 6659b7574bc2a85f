"""The site as it is deployed: `collectstatic` into a folder of its own, then gunicorn
with the shipped gunicorn.conf.py and the production settings (annotation_site.settings, DEBUG
off, a real SECRET_KEY), as a subprocess on a free port.

Helpers, not fixtures, where a test module decides the database and broker the server gets:
tests/production/test_static_files.py runs on both databases with a server that only answers
files, test_production_pass.py on the test database with the suite's Celery worker.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

# Not the example key and not the development one: what settings.py demands with DEBUG off.
PRODUCTION_SECRET_KEY = "q8Zr3Lm1Vx7Tn5Kc2Wd9Hf4Bs6Jp0Ga8Ye3Ru1Io7Pl5Mk2Nb9Xc4"
# Variables of the test process that would make the subprocess something else than production:
# test_settings' DEBUG=1, pytest-django's settings module, an explicit manifest switch.
NOT_PRODUCTION = ("DEBUG", "DJANGO_SETTINGS_MODULE", "STATIC_MANIFEST", "EMBEDDED_TASKS")


def production_environment(static_root: Path, **changes: str) -> dict[str, str]:
    """The environment of a production process: this one's (PATH, coverage's subprocess hook, the
    broker and cache of a PostgreSQL pass) without what makes it a test process, plus `changes`."""
    env = {name: value for name, value in os.environ.items() if name not in NOT_PRODUCTION}
    env.update(
        DJANGO_SETTINGS_MODULE="annotation_site.settings",
        DEBUG="0",
        SECRET_KEY=PRODUCTION_SECRET_KEY,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        STATIC_ROOT=str(static_root),
    )
    env.update(changes)
    return env


def collect_static(static_root: Path) -> None:
    """`manage.py collectstatic` as the Dockerfile runs it (STATIC_MANIFEST=1), into `static_root`."""
    env = production_environment(static_root, STATIC_MANIFEST="1")
    done = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="session")
def collected_static(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A STATIC_ROOT that `collectstatic` filled once for the session (hashed, compressed files and their manifest)."""
    root = tmp_path_factory.mktemp("static-root")
    collect_static(root)
    return root


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Straight to 127.0.0.1, whatever proxy the environment names.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


def fetch(url: str, headers: dict[str, str] | None = None) -> Answer:
    """GET `url` without following redirects' surprises: the status, headers (lower-case names) and body."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with _direct.open(request, timeout=30) as response:
            return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())


@dataclass
class Gunicorn:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path


@contextmanager
def gunicorn_server(env: dict[str, str], log_path: Path) -> Iterator[Gunicorn]:
    """gunicorn with `-c gunicorn.conf.py` (its own processes, threads, preload) on a free port of
    127.0.0.1 (GUNICORN_BIND, as the image sets it), until the block ends."""
    port = free_port()
    env = dict(env, GUNICORN_BIND=f"127.0.0.1:{port}")
    gunicorn = Path(sys.executable).parent / "gunicorn"
    log = open(log_path, "w")  # noqa: SIM115 - closed when the server stops
    process = subprocess.Popen(
        [str(gunicorn), "annotation_site.wsgi", "-c", "gunicorn.conf.py"],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Gunicorn(f"http://127.0.0.1:{port}", process, log_path)
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gunicorn exited at start:\n{log_path.read_text()[-3000:]}")
            try:
                fetch(f"{server.url}/favicon.ico")
                log_text = log_path.read_text()
                # Every worker booted has its signal handlers (gunicorn.conf.py's post_worker_init),
                # so a stop at the end is not lost in a worker's first second.
                if log_text.count("Worker ready") >= log_text.count("Booting worker") > 0:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"gunicorn's workers were not ready within 90 s:\n{log_text[-3000:]}")
                time.sleep(0.1)
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"gunicorn did not answer within 90 s:\n{log_path.read_text()[-3000:]}"
                    ) from None
                time.sleep(0.25)
        yield server
    finally:
        if process.poll() is None:
            # A quick stop (SIGINT) to the master alone, which passes it on (SIGQUIT) to each worker:
            # a worker that got both (the group's SIGINT and the master's SIGQUIT) ran its handler
            # inside itself and hung on the thread pool's shutdown lock until the master's
            # graceful_timeout (30 s) ran out and it was killed.
            os.kill(process.pid, signal.SIGINT)
        asked = time.monotonic()
        stopped_by_itself = True
        try:
            # gunicorn's own bound: its master kills a worker still busy after graceful_timeout (30 s).
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            stopped_by_itself = False
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()
        took = time.monotonic() - asked
        if stopped_by_itself and took > 10:
            # A stop that waited on a worker (a request still in flight, or a lost signal) costs a
            # deploy as much; said in the report, with the log, without failing the tests that passed.
            warnings.warn(
                f"gunicorn took {took:.0f} s to stop on SIGINT:\n{log_path.read_text()[-3000:]}", stacklevel=1
            )
        # A deploy stops gunicorn the same way: a master that outlives its own graceful_timeout
        # would hang every restart.
        assert stopped_by_itself, f"gunicorn did not stop on SIGINT within 40 s:\n{log_path.read_text()[-3000:]}"
