"""A GPU node that shares nothing with the platform but the network, for the tests of this folder.

`gpu_node_worker` is a real `celery worker` subprocess started with NO database settings at all
(settings fall back to Django's dummy backend, so any ORM use on it fails), its own empty
DATA_DIR, PLATFORM_URL pointing at pytest-django's live server, and a node token. It consumes
a queue of its own, so the suite's ordinary worker (tests/conftest.py) never takes its runs.
Without a broker it yields None and the tests run the same HTTP transport
in-process against the live server.
"""

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, broker_url, xdist_suffix


class GpuNodeProcess(subprocess.Popen[bytes]):
    """The GPU node's Celery worker (gpu_node_worker): its log and data folder beside it."""

    log_path: Path
    data_dir: Path


NODE_KEY = "nliw_test-" + secrets.token_urlsafe(16)
REMOTE_QUEUE = f"gpu-node-test-{os.getpid()}"


@pytest.fixture
def node_token(transactional_db):
    """The NodeToken row of NODE_KEY (every transactional test starts from an empty database)."""
    from modeling.models import NodeToken, hash_node_key

    return NodeToken.objects.create(name="test-gpu-node", key_hash=hash_node_key(NODE_KEY))


@pytest.fixture(scope="session")
def gpu_node_data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("gpu-node-data")


def gpu_node_env(platform_url, data_dir):
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DATABASE", "PG"))}
    env.update(
        PLATFORM_URL=platform_url,
        NODE_TOKEN=NODE_KEY,
        DATA_DIR=str(data_dir),
        TRAINING_HEARTBEAT_SECONDS="0.2",
        DJANGO_SETTINGS_MODULE="annotation_site.settings",
    )
    return env


@pytest.fixture(scope="session")
def gpu_node_worker(live_server, gpu_node_data_dir):
    """A Celery worker on another 'machine': no DATABASE_URL, its own DATA_DIR, the platform over HTTP."""
    if not broker_url():
        yield None
        return
    celery = shutil.which("celery", path=str(Path(sys.executable).parent)) or "celery"
    log_path = Path(os.environ.get("GPU_NODE_TEST_LOG", f"/tmp/nli-test-gpu-node-worker{xdist_suffix()}.log"))
    with open(log_path, "w") as log:
        process = GpuNodeProcess(
            [
                celery,
                "-A",
                "annotation_site",
                "worker",
                "-Q",
                REMOTE_QUEUE,
                "--concurrency",
                "1",
                "--pool",
                "prefork",
                "--prefetch-multiplier",
                "1",
                "-l",
                "info",
                "-n",
                f"gpu-node-{os.getpid()}@%h",
            ],
            cwd=REPO_ROOT,
            env=gpu_node_env(live_server.url, gpu_node_data_dir),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        from annotation_site.celery import app

        deadline = time.monotonic() + 60
        name = f"gpu-node-{os.getpid()}@"
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the GPU node's celery worker exited early; see {log_path}")
            replies = app.control.ping(timeout=1.0) or []
            if any(name in host for reply in replies for host in reply):
                break
        else:
            os.killpg(process.pid, signal.SIGTERM)
            raise RuntimeError(f"the GPU node's celery worker did not answer within 60 s; see {log_path}")
        process.log_path = log_path
        process.data_dir = gpu_node_data_dir
        yield process
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def gpu_node(gpu_node_worker, gpu_node_data_dir, live_server, node_token, settings, monkeypatch):
    """Runs launched in this test train on the GPU node: the subprocess worker, or in-process over HTTP.

    Returns the node's DATA_DIR (where its snapshot cache lives).
    """
    from annotation_site.celery import app
    from modeling.training import services

    if gpu_node_worker is not None:

        def send_to_gpu_node(run_id, task_id):
            app.loader.import_default_modules()  # as base.task_queue.enqueue does in a web process
            app.tasks[services.TRAINING_TASK].apply_async(args=(run_id,), task_id=task_id, queue=REMOTE_QUEUE)

        monkeypatch.setattr(services, "_enqueue", send_to_gpu_node)
        return gpu_node_data_dir
    # No broker: the task runs in this process, but through the same HTTP transport and its own folder.
    monkeypatch.setitem(app.conf, "task_always_eager", True)
    settings.PLATFORM_URL = live_server.url
    settings.NODE_TOKEN = NODE_KEY
    settings.SNAPSHOT_CACHE_DIR = gpu_node_data_dir / "snapshot-cache"
    return gpu_node_data_dir


# --- the node API's tests: one node token, a researcher's token, a small served snapshot, a queued run


@pytest.fixture
def node(db):
    from .helpers import worker_client

    return worker_client("node-a")


@pytest.fixture
def researcher_api(researcher):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


@pytest.fixture
def snapshot(db, researcher):
    from .helpers import learnable_splits, served_snapshot

    return served_snapshot(learnable_splits(1, n_train=30, n_eval=6), researcher)


@pytest.fixture
def queued_run(snapshot):
    from modeling.training.services import launch_training_run

    from .helpers import SMALL

    return launch_training_run(snapshot, "cbow", config=SMALL, enqueue=False)
