"""The multi-host check: two web hosts and one Celery worker that share no disk.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/nli_multihost \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/4 CACHE_URL=redis://127.0.0.1:6379/5 \\
        .venv/bin/python bench/multi_host.py [--s3-endpoint URL --bucket NAME] [--keep DIR]

Starts web host A and web host B (gunicorn with the shipped gunicorn.conf.py, DEBUG off, a real
SECRET_KEY, static files collected per host) and one Celery worker, each with a DATA_DIR of its
own, all on the same database and Redis and the same S3-compatible bucket (OBJECT_STORAGE_*; a
moto_server process is started when no --s3-endpoint is given). Then, as a lab would:

    upload premises on A's dashboard → their import by the worker → a writing submit on B →
    validation labels on A and B → a snapshot asked on A, exported by the worker → its files
    downloaded from A and from B → a release made on B → a training run launched on B, trained
    by the worker (the majority baseline, CPU) → its checkpoint downloaded from A.

Prints each step with the host it ran on and its outcome: passed, failed, or "not yet through
storage" where the step's own part of the platform does not yet keep its files in the storage
(the check then goes on from the operator's side so that later steps are still checked).
Exits 1 when a step failed. The database must be migrated (`manage.py migrate`); every run
makes its own dataset and accounts, so runs never meet. tests/test_multi_host.py runs it.
"""

import argparse
import hashlib
import http.cookiejar
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PASSED, FAILED, NOT_YET = "passed", "failed", "not yet through storage"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
LABEL_FIELD = re.compile(r'name="(item-[0-9a-f]+)"')
GENRE = "fiction"
PREMISES = (
    "The old ferry left the harbour an hour before the storm reached the coast.\n"
    "Her brother kept every letter their grandmother had written during the war.\n"
    "A young doctor walked through the flooded village to reach the school.\n"
    "The committee postponed its decision until the engineers had inspected the bridge.\n"
)
# How long one step may wait for the worker (an import, an export, a training run with torch's import).
STEP_TIMEOUT = float(os.environ.get("MULTI_HOST_STEP_TIMEOUT", "120"))


@dataclass
class Step:
    name: str
    host: str
    status: str
    detail: str = ""
    seconds: float = 0.0

    def line(self, number: int) -> str:
        return f"[{number:>2}] {self.name:<44} on {self.host:<12} {self.seconds:5.1f} s {self.status}" + (
            f": {self.detail}" if self.detail else ""
        )


class StepFailed(Exception):
    pass


# --- processes --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Process:
    """A subprocess of the check (its own process group), its log beside it."""

    def __init__(self, name: str, argv: list[str], env: Mapping[str, str], log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.popen = subprocess.Popen(
            argv, cwd=REPO, env=dict(env), stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGTERM)
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait(timeout=10)
        self.log.close()

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def wait_until(predicate: Callable[[], Any], what: str, timeout: float = STEP_TIMEOUT, interval: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise StepFailed(f"timed out after {timeout:.0f} s waiting for {what}")


def start_s3_server(folder: Path) -> tuple[Process, str]:
    """A moto_server process on a free port (an S3-compatible server), once it answers."""
    executable = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or "moto_server"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    process = Process("s3", [executable, "-H", "127.0.0.1", "-p", str(port)], env, folder / "moto_server.log")
    endpoint = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if not process.alive():
            raise StepFailed(f"moto_server exited: {process.tail()}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                return True
        except OSError:
            return False

    wait_until(answers, "moto_server to answer", timeout=60)
    return process, endpoint


def create_bucket(env: Mapping[str, str]) -> None:
    import boto3

    boto3.client(
        "s3",
        endpoint_url=env["OBJECT_STORAGE_ENDPOINT_URL"],
        region_name=env.get("OBJECT_STORAGE_REGION") or "us-east-1",
        aws_access_key_id=env.get("OBJECT_STORAGE_ACCESS_KEY") or "testing",
        aws_secret_access_key=env.get("OBJECT_STORAGE_SECRET_KEY") or "testing",
    ).create_bucket(Bucket=env["OBJECT_STORAGE_BUCKET"])


class WebHost:
    """gunicorn with the shipped gunicorn.conf.py, DEBUG off, its own DATA_DIR and STATIC_ROOT."""

    def __init__(self, name: str, env: Mapping[str, str], folder: Path, static_root: Path) -> None:
        self.name = name
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.data_dir = folder / "var"
        self.data_dir.mkdir(parents=True)
        host_env = dict(
            env,
            DATA_DIR=str(self.data_dir),
            STATIC_ROOT=str(static_root),
            GUNICORN_BIND=f"127.0.0.1:{self.port}",
            GUNICORN_WORKERS="1",
            GUNICORN_THREADS="4",
        )
        self.process = Process(
            name,
            [sys.executable, "-m", "gunicorn", "annotation_site.wsgi", "-c", "gunicorn.conf.py"],
            host_env,
            folder / "gunicorn.log",
        )

    def wait_until_answering(self) -> None:
        def answers() -> bool:
            if not self.process.alive():
                raise StepFailed(f"{self.name} exited at start:\n{self.process.tail()}")
            try:
                with urllib.request.urlopen(f"{self.base}/accounts/login/", timeout=2) as answer:
                    return bool(answer.status == 200)
            except OSError:
                return False

        wait_until(answers, f"{self.name} to answer", timeout=90)


class WorkerHost:
    """One Celery worker (queues default and gpu: imports, exports, training) with its own DATA_DIR."""

    def __init__(self, name: str, env: Mapping[str, str], folder: Path, run_id: str) -> None:
        self.name = name
        self.data_dir = folder / "var"
        self.data_dir.mkdir(parents=True)
        self.nodename = f"multihost-{run_id}@{socket.gethostname()}"
        celery = shutil.which("celery", path=str(Path(sys.executable).parent)) or "celery"
        argv = [celery, "-A", "annotation_site", "worker", "-Q", "default,gpu", "--concurrency", "1"]
        argv += ["--pool", "prefork", "--prefetch-multiplier", "1", "-l", "info", "-n", self.nodename]
        self.process = Process(name, argv, dict(env, DATA_DIR=str(self.data_dir)), folder / "celery.log")

    def wait_until_answering(self) -> None:
        # Its log, not a ping: the check may run on a broker of its own, which this process does not use.
        def ready() -> bool:
            if not self.process.alive():
                raise StepFailed(f"the worker exited at start:\n{self.process.tail()}")
            return " ready." in self.process.log_path.read_text(errors="replace")

        wait_until(ready, "the Celery worker to be ready", timeout=90)


# --- a person's browser -----------------------------------------------------------------------


class Browser:
    """One person's cookies (a session made for their account), asking any host."""

    def __init__(self, session_key: str) -> None:
        self.jar = http.cookiejar.CookieJar()
        self.jar.set_cookie(
            http.cookiejar.Cookie(
                0, "sessionid", session_key, None, False, "127.0.0.1", False, False, "/", True, False, None, False,
                None, None, {},
            )
        )  # fmt: skip
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, host: WebHost, path: str) -> tuple[int, str, bytes]:
        return self._open(urllib.request.Request(host.base + path))

    def post(
        self, host: WebHost, path: str, fields: Mapping[str, str], files: Mapping[str, tuple[str, bytes]] | None = None
    ) -> tuple[int, str, bytes]:
        """POST a form as the page that holds it would: the page's CSRF token read first."""
        _, _, page = self.get(host, path)
        token = CSRF.search(page.decode(errors="replace"))
        data = dict(fields, csrfmiddlewaretoken=token.group(1) if token else "")
        if files:
            body, content_type = multipart(data, files)
        else:
            body, content_type = urllib.parse.urlencode(data).encode(), "application/x-www-form-urlencoded"
        request = urllib.request.Request(host.base + path, body, {"Content-Type": content_type}, method="POST")
        request.add_header("Referer", host.base + path)
        return self._open(request)

    def _open(self, request: urllib.request.Request) -> tuple[int, str, bytes]:
        try:
            with self.opener.open(request, timeout=120) as answer:
                return answer.status, answer.geturl(), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, error.geturl(), error.read()


def multipart(fields: Mapping[str, str], files: Mapping[str, tuple[str, bytes]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, content) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: text/plain\r\n\r\n"
        )
        parts.append(head.encode() + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def session_for(user: Any, secret_key: str) -> str:
    """A logged-in session of `user` in the shared session store, as the login page of a host
    whose SECRET_KEY is `secret_key` makes one (the session and its auth hash are signed with it)."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.test.utils import override_settings

    with override_settings(SECRET_KEY=secret_key):
        store = import_module(settings.SESSION_ENGINE).SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
    return str(store.session_key)


# --- the check ----------------------------------------------------------------------------------


class Check:
    """The hosts, the people and the steps of one run."""

    def __init__(self, env: Mapping[str, str], folder: Path, report: Callable[[str], None]) -> None:
        self.env = env
        self.folder = folder
        self.report = report
        self.run_id = uuid.uuid4().hex[:8]
        self.dataset = f"multihost-{self.run_id}"
        self.steps: list[Step] = []
        self.notes: dict[str, Any] = {}

    def record(self, name: str, host: str, status: str, detail: str = "", seconds: float = 0.0) -> None:
        step = Step(name, host, status, detail, seconds)
        self.steps.append(step)
        self.report(step.line(len(self.steps)))

    @contextmanager
    def step(self, name: str, host: str) -> Iterator[dict[str, str]]:
        """Run a step; what it puts in the yielded dict ("detail", "status") is reported with it."""
        outcome: dict[str, str] = {}
        started = time.monotonic()
        try:
            yield outcome
        except StepFailed as failure:
            self.record(name, host, FAILED, str(failure), time.monotonic() - started)
            raise
        except Exception as error:
            self.record(name, host, FAILED, f"{type(error).__name__}: {error}", time.monotonic() - started)
            raise StepFailed(str(error)) from error
        self.record(name, host, outcome.get("status", PASSED), outcome.get("detail", ""), time.monotonic() - started)

    def people(self) -> None:
        from django.contrib.auth.models import User

        from base.permissions import ensure_researcher_group
        from corpus.models import Worker

        key = self.env["SECRET_KEY"]
        researcher = User.objects.create_user(f"researcher-{self.run_id}", is_staff=True, is_superuser=True)
        researcher.groups.add(ensure_researcher_group())
        self.researcher = Browser(session_for(researcher, key))
        self.writer = Browser(session_for(self._worker(f"writer-{self.run_id}", Worker, User), key))
        self.validators = [
            Browser(session_for(self._worker(f"validator{n}-{self.run_id}", Worker, User), key)) for n in range(4)
        ]

    @staticmethod
    def _worker(name: str, worker_model: Any, user_model: Any) -> Any:
        user = user_model.objects.create_user(name)
        worker_model.objects.create(user=user)
        return user

    def run(self) -> list[Step]:
        with ExitStack() as stack:
            self.start_hosts(stack)
            self.people()
            try:
                self.upload_and_import()
                self.write_and_validate()
                snapshot = self.snapshot()
                self.download(snapshot)
                self.release(snapshot)
                run = self.train(snapshot)
                self.read_checkpoint(run)
            except StepFailed:
                pass  # recorded; the steps after it depend on it
        return self.steps

    # --- the hosts

    def start_hosts(self, stack: ExitStack) -> None:
        env = dict(self.env, NLI_DEFAULT_DATASET=self.dataset)
        with self.step("collectstatic (each web host its own copy)", "operator") as outcome:
            static = self.folder / "static-a"
            done = subprocess.run(
                [sys.executable, "manage.py", "collectstatic", "--noinput", "-v", "0"],
                cwd=REPO,
                env=dict(env, STATIC_ROOT=str(static), DATA_DIR=str(self.folder / "operator")),
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode:
                raise StepFailed(done.stderr[-2000:])
            shutil.copytree(static, self.folder / "static-b")
            outcome["detail"] = "STATIC_ROOT not shared"
        self.a = WebHost("web-a", env, self.folder / "web-a", self.folder / "static-a")
        stack.callback(self.a.process.stop)
        self.b = WebHost("web-b", env, self.folder / "web-b", self.folder / "static-b")
        stack.callback(self.b.process.stop)
        self.worker = WorkerHost("worker", env, self.folder / "worker", self.run_id)
        stack.callback(self.worker.process.stop)
        with self.step("start: two web hosts, one Celery worker", "all") as outcome:
            self.a.wait_until_answering()
            self.b.wait_until_answering()
            self.worker.wait_until_answering()
            folders = {h.name: str(h.data_dir) for h in (self.a, self.b, self.worker)}
            outcome["detail"] = f"DATA_DIR {json.dumps(folders)}; bucket {self.env['OBJECT_STORAGE_BUCKET']}"

    # --- upload → import

    def upload_and_import(self) -> None:
        from collection.models import PremiseImport
        from corpus.models import ImportStatus

        with self.step("upload premises on the dashboard", self.a.name) as outcome:
            status, url, _ = self.researcher.post(
                self.a,
                "/dashboard/imports/",
                {"kind": "premises", "genre": GENRE, "dataset": self.dataset, "format": "text"},
                {"file": ("premises.txt", PREMISES.encode())},
            )
            if status != 200 or urllib.parse.urlparse(url).path != "/dashboard/imports/":
                raise StepFailed(f"the upload answered {status} ({url})")
            outcome["detail"] = f"{len(PREMISES.encode())} bytes"

        imports = PremiseImport.objects.filter(dataset__slug=self.dataset)
        with self.step("import the upload", self.worker.name) as outcome:
            try:
                wait_until(
                    lambda: imports.filter(status__in=[ImportStatus.DONE, ImportStatus.FAILED]).exists(),
                    "the import to end",
                    timeout=min(STEP_TIMEOUT, 60),
                )
                ended = imports.get()
            except (StepFailed, PremiseImport.DoesNotExist):
                ended = None
            if ended is not None and ended.status == ImportStatus.DONE:
                outcome["detail"] = f"{ended.kept} premises kept"
            else:
                # The upload stayed on host A's disk; the worker cannot read it. Imported from the
                # operator's side instead so that the later steps are still checked.
                why = f"import {ended.status}: {ended.error[:200]}" if ended is not None else "no import row ended"
                self._import_from_operator()
                outcome["status"] = NOT_YET
                outcome["detail"] = f"{why}; imported with manage.py import_premises instead"

        from collection.splits import assign_splits

        assign_splits(self.dataset, dev=0, test=0)  # every premise trains: the snapshot has a train split

    def _import_from_operator(self) -> None:
        source = self.folder / "premises.txt"
        source.write_text(PREMISES, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "manage.py", "import_premises", "--genre", GENRE, "--dataset", self.dataset, str(source)],
            cwd=REPO,
            env=dict(self.env, DATA_DIR=str(self.folder / "operator")),
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise StepFailed(f"import_premises failed: {done.stderr[-1000:]}")

    # --- writing → validation

    def write_and_validate(self) -> None:
        from corpus.models import Pair
        from validation.services import mark_for_validation

        with self.step("writing: two submits (six pairs)", self.b.name) as outcome:
            for number in range(2):
                status, url, page = self.writer.get(self.b, "/write/next/")
                path = urllib.parse.urlparse(url).path
                if status != 200 or not re.fullmatch(r"/write/[0-9a-f-]{36}/", path):
                    raise StepFailed(f"no writing task: {status} {path}")
                status, url, _ = self.writer.post(
                    self.b,
                    path,
                    {
                        "entailment": f"A vessel departed before bad weather arrived ({number}).",
                        "neutral": f"The crew of the ferry was nervous about the trip ({number}).",
                        "contradiction": f"Nothing ever left the harbour that day ({number}).",
                    },
                )
                if status != 200 or urllib.parse.urlparse(url).path == path:
                    raise StepFailed(f"the submit was refused: {status}")
            pairs = Pair.objects.filter(dataset__slug=self.dataset)
            outcome["detail"] = f"{pairs.count()} pairs"

        mark_for_validation(pairs)
        hosts = [self.a, self.a, self.b, self.b]
        with self.step("validation: four validators label every pair", f"{self.a.name}+{self.b.name}") as outcome:
            labels = 0
            for validator, host in zip(self.validators, hosts, strict=True):
                for _ in range(10):
                    status, url, page = validator.get(host, "/validate/next/")
                    path = urllib.parse.urlparse(url).path
                    if "/validate/batch/" not in path:
                        break
                    fields = dict.fromkeys(set(LABEL_FIELD.findall(page.decode())), "entailment")
                    status, url, _ = validator.post(host, path, fields)
                    if status != 200:
                        raise StepFailed(f"labels refused: {status}")
                    labels += len(fields)
            outcome["detail"] = f"{labels} labels"

    # --- snapshot → downloads

    def snapshot(self) -> Any:
        from modeling.models import Snapshot

        with self.step("ask for a snapshot on the dashboard", self.a.name):
            status, url, _ = self.researcher.post(
                self.a, "/dashboard/snapshots/", {"datasets": self.dataset, "unvalidated_gold": "author"}
            )
            if status != 200 or urllib.parse.urlparse(url).path != "/dashboard/snapshots/":
                raise StepFailed(f"the dashboard answered {status} ({url})")
        with self.step("export the snapshot", self.worker.name) as outcome:
            snapshot = wait_until(
                lambda: Snapshot.objects.filter(datasets=[self.dataset], status__in=["done", "failed"]).first(),
                "the export",
            )
            if snapshot.status != "done":
                raise StepFailed(f"export failed: {snapshot.error}")
            outcome["detail"] = f"snapshot {snapshot.pk}, {snapshot.row_count} rows, {snapshot.files.count()} files"
        return snapshot

    def download(self, snapshot: Any) -> None:
        for host in (self.a, self.b):
            with self.step("download every file of the snapshot", host.name) as outcome:
                for record in snapshot.files.all():
                    status, _, body = self.researcher.get(host, f"/api/snapshots/{snapshot.pk}/files/{record.name}")
                    if status != 200:
                        raise StepFailed(f"{record.name}: {status} {body[:200]!r}")
                    if hashlib.sha256(body).hexdigest() != record.sha256:
                        raise StepFailed(f"{record.name}: its bytes differ from the export's sha256")
                outcome["detail"] = f"{snapshot.files.count()} files, each matching its sha256"

    # --- release

    def release(self, snapshot: Any) -> None:
        name = f"multi-host-{snapshot.pk}"
        with self.step("make_release of the snapshot into the releases storage", self.b.name) as outcome:
            done = subprocess.run(
                [sys.executable, "manage.py", "make_release", str(snapshot.pk), "--name", name],
                cwd=REPO,
                env=dict(self.env, DATA_DIR=str(self.b.data_dir)),
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                raise StepFailed(done.stderr[-1500:])
            outcome["detail"] = f"{len(done.stdout.splitlines())} lines of report"
        with self.step("download the release's card", self.a.name) as outcome:
            query = urllib.parse.urlencode({"release": name, "path": "README.md"})
            status, _, body = self.researcher.get(self.a, f"/dashboard/releases/file/?{query}")
            if status != 200 or b"configs:" not in body:
                raise StepFailed(f"the release's README.md answered {status} on the host that did not make it")
            outcome["detail"] = f"README.md, {len(body)} bytes, from the releases storage"

    # --- training → checkpoint

    def train(self, snapshot: Any) -> Any:
        from modeling.models import TrainingRun

        with self.step("launch a training run (majority)", self.b.name):
            status, _, page = self.researcher.post(
                self.b, "/dashboard/training/", {"snapshot": str(snapshot.pk), "model": "majority", "options": "{}"}
            )
            if status != 200 or not TrainingRun.objects.filter(snapshot=snapshot).exists():
                errors = re.findall(r'class="[^"]*error[^"]*"[^>]*>([^<]+)', page.decode(errors="replace"))
                raise StepFailed(f"launch refused: {status} {errors[:3]}")
        with self.step("train on the snapshot", self.worker.name) as outcome:
            run = wait_until(
                lambda: TrainingRun.objects.filter(snapshot=snapshot, status__in=["done", "failed"]).first(),
                "the training run",
            )
            if run.status != "done":
                raise StepFailed(f"run failed: {run.error}")
            source = run.results.get("snapshot_source", {}).get("source", "its own disk")
            outcome["detail"] = f"run {run.pk} by {run.node_hostname}; snapshot from {source}"
        return run

    def read_checkpoint(self, run: Any) -> None:
        with self.step("download the run's checkpoint", self.a.name) as outcome:
            status, _, body = self.researcher.get(self.a, f"/api/training-runs/{run.pk}/checkpoint/")
            if status != 200:
                raise StepFailed(f"{status} {body[:200]!r}")
            if hashlib.sha256(body).hexdigest() != run.checkpoint_sha256:
                raise StepFailed("its bytes differ from the checkpoint's sha256")
            outcome["detail"] = f"{len(body)} bytes, sha256 matches"


def base_environment(s3_env: Mapping[str, str], database_url: str) -> dict[str, str]:
    """What every process of the check shares: the database, the broker and cache, the bucket; DEBUG off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OBJECT_STORAGE_", "PYTEST_"))}
    env.update(s3_env)
    env.update(
        DJANGO_SETTINGS_MODULE="annotation_site.settings",
        DATABASE_URL=database_url,
        DATABASE_CONN_MAX_AGE="0",
        DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        PYTHONPATH=str(REPO),
        TRAINING_HEARTBEAT_SECONDS="1",
    )
    return env


def run_check(env: Mapping[str, str], folder: Path, report: Callable[[str], None] = print) -> list[Step]:
    """Run the check with `env` (base_environment) in `folder`; the steps, each with its host."""
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "OBJECT_STORAGE_BUCKET"):
        if not env.get(name):
            raise SystemExit(f"{name} must be set: every host shares the database, the broker and the bucket")
    return Check(env, folder, report).run()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--s3-endpoint", help="an S3-compatible endpoint (default: start moto_server)")
    parser.add_argument("--bucket", help="the bucket (default: a new one)")
    parser.add_argument("--keep", help="a folder to keep the hosts' folders and logs in (default: a temporary one)")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("DEBUG", "1")  # this process is the operator's shell, not a host
    folder = Path(args.keep or tempfile.mkdtemp(prefix="multi-host-"))
    folder.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        endpoint = args.s3_endpoint
        if not endpoint:
            s3, endpoint = start_s3_server(folder)
            stack.callback(s3.stop)
        s3_env = {
            "OBJECT_STORAGE_BUCKET": args.bucket or f"multi-host-{uuid.uuid4().hex[:8]}",
            "OBJECT_STORAGE_ENDPOINT_URL": endpoint,
            "OBJECT_STORAGE_REGION": os.environ.get("OBJECT_STORAGE_REGION", "us-east-1"),
            "OBJECT_STORAGE_ACCESS_KEY": os.environ.get("OBJECT_STORAGE_ACCESS_KEY", "testing"),
            "OBJECT_STORAGE_SECRET_KEY": os.environ.get("OBJECT_STORAGE_SECRET_KEY", "testing"),
        }
        if not args.bucket:
            create_bucket(s3_env)
        # The operator's own process reads the same bucket (the steps check what hosts stored).
        os.environ.update(s3_env)
        import django

        django.setup()
        env = base_environment(s3_env, os.environ.get("DATABASE_URL", ""))
        print(f"multi-host check in {folder}")
        steps = run_check(env, folder)
    failed = [s for s in steps if s.status == FAILED]
    pending = [s for s in steps if s.status == NOT_YET]
    print(
        f"{len(steps) - len(failed) - len(pending)} passed, {len(pending)} not yet through storage, {len(failed)} failed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
