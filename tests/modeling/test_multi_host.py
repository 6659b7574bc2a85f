"""The multi-host check (bench/multi_host.py) in the suite: two gunicorn web hosts and a Celery
worker, each with its own DATA_DIR, on the test database, Redis and a bucket of the S3 server.

The check's processes use a Redis database of their own as broker, so the suite's session-wide
Celery worker (tests/conftest.py, without the bucket's settings) never takes one of their tasks.
"""

import importlib.util
import os
import urllib.parse

import pytest

from tests.conftest import REPO_ROOT, broker_url, celery_subprocess_env, skip_or_fail_in_ci

pytestmark = [pytest.mark.celery_worker, pytest.mark.slow]


def multi_host_module():
    spec = importlib.util.spec_from_file_location("multi_host", REPO_ROOT / "bench" / "multi_host.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def broker_of_its_own(url: str) -> str:
    """The same Redis, another database number (MULTI_HOST_BROKER_DB, else eight above the suite's)."""
    parsed = urllib.parse.urlparse(url)
    number = int(parsed.path.strip("/") or 0)
    own = int(os.environ.get("MULTI_HOST_BROKER_DB", (number + 8) % 16))
    return urllib.parse.urlunparse(parsed._replace(path=f"/{own}"))


def test_two_web_hosts_and_a_worker_share_nothing_but_database_broker_and_bucket(
    transactional_db, s3_storage, tmp_path, capsys
):
    if not broker_url():
        skip_or_fail_in_ci("the multi-host check needs a Redis broker (CELERY_BROKER_URL)")
    multi_host = multi_host_module()
    env = multi_host.base_environment(dict(s3_storage), celery_subprocess_env()["DATABASE_URL"])
    env["CELERY_BROKER_URL"] = broker_of_its_own(broker_url())
    env["CELERY_RESULT_BACKEND"] = env["CELERY_BROKER_URL"]
    lines: list[str] = []
    steps = multi_host.run_check(env, tmp_path, report=lines.append)
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    # Every step goes through the storage now: none may fall back to a path of one host's disk.
    assert [s for s in steps if s.status != multi_host.PASSED] == [], "\n".join(lines)
    ran_on = {s.name: s.host for s in steps}
    assert ran_on["import the upload"] == "worker"
    assert ran_on["make_release of the snapshot into the releases storage"] == "web-b"
    assert ran_on["download the release's card"] == "web-a"
    assert ran_on["export the snapshot"] == ran_on["train on the snapshot"] == "worker"
    downloads = [s.host for s in steps if s.name == "download every file of the snapshot"]
    assert downloads == ["web-a", "web-b"]
    assert ran_on["download the run's checkpoint"] == "web-a" and ran_on["launch a training run (majority)"] == "web-b"
    # Nothing of the snapshot or the checkpoint lies in a host's DATA_DIR: the bucket holds them.
    assert s3_storage.keys_under("snapshots/") and s3_storage.keys_under("checkpoints/")
    assert s3_storage.keys_under("releases/")
    for host in ("web-a", "web-b", "worker"):
        assert not list((tmp_path / host / "var").glob("snapshots/*/manifest.json"))
        assert not list((tmp_path / host / "var").glob("checkpoints/**/*.safetensors"))
