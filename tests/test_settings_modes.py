"""The two ways the platform runs, observed from a fresh process started with each environment.

Embedded (no DATABASE_URL, no CELERY_BROKER_URL, no CACHE_URL): the embedded PostgreSQL cluster in
the checkout's var/postgres/, tasks run in the calling process, a per-process cache. With services:
the database of DATABASE_URL answers the queries, a task goes to the broker's queue and not into
the caller, the cache is Redis. Any other database is refused.
"""

import json
import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings
from django.db import connection

from tests.conftest import REPO_ROOT, broker_url, needs_broker, subprocess_database_url

PROBE = r"""
import json, os, sys
import django
django.setup()
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from annotation_site.celery import app

queue = sys.argv[1]

@app.task(name="probe.where_am_i")
def where_am_i():
    return os.getpid()

answer = {
    "engine": connection.settings_dict["ENGINE"],
    "name": str(connection.settings_dict["NAME"]),
    "host": str(connection.settings_dict["HOST"]),
    "cache": settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1],
    "sessions": settings.SESSION_ENGINE.rsplit(".", 1)[-1],
    "pid": os.getpid(),
    "training_queue": app.amqp.router.route({}, "modeling.tasks.run_training")["queue"].name,
    "artifacts_on_arrival": settings.ARTIFACTS_ON_ARRIVAL,
}
if os.environ.get("PROBE_QUERY"):
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        answer["server"] = cursor.fetchone()[0]
result = where_am_i.apply_async(queue=queue)
answer["eager"] = type(result).__name__ == "EagerResult"
answer["task_pid"] = result.get(timeout=5) if answer["eager"] else None
if not answer["eager"]:
    with app.connection_for_write() as conn:
        answer["queued_on_broker"] = conn.default_channel.client.llen(queue)
        conn.default_channel.client.delete(queue)
print("PROBE " + json.dumps(answer))
"""


def probe(tmp_path, **env_changes):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "CELERY_RESULT_BACKEND")
    }
    env.update(DJANGO_SETTINGS_MODULE="annotation_site.settings", DATA_DIR=str(tmp_path / "var"), **env_changes)
    queue = f"probe-{uuid.uuid4().hex}"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, queue],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("PROBE "))
    return json.loads(line[len("PROBE ") :])


def test_embedded_mode_uses_the_cluster_in_the_checkout_and_runs_tasks_in_process(tmp_path):
    answer = probe(tmp_path)
    assert answer["engine"] == "django.db.backends.postgresql"
    # The Unix socket of the cluster scripts/with_database.py starts in var/postgres/: no TCP port.
    assert answer["host"] == str(REPO_ROOT / "var" / "postgres") and answer["name"] == "nli"
    assert answer["eager"] is True and answer["task_pid"] == answer["pid"]
    assert answer["cache"] == "LocMemCache"
    assert answer["sessions"] == "db"  # a process's own cache would serve another's stale session
    assert answer["training_queue"] == "gpu"
    # No broker: new pairs are not tagged inside the request or the import.
    assert answer["artifacts_on_arrival"] is False


@pytest.mark.parametrize("url", ["sqlite:///elsewhere.sqlite3", "mysql://user@127.0.0.1/nli"])
def test_a_database_that_is_not_postgresql_is_refused_with_a_clear_message(tmp_path, url):
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "CACHE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="annotation_site.settings", DATA_DIR=str(tmp_path / "var"), DATABASE_URL=url)
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in done.stderr
    assert not (REPO_ROOT / "elsewhere.sqlite3").exists()


def test_with_services_postgresql_answers_and_a_task_goes_to_the_broker_not_into_the_caller(db, tmp_path):
    needs_broker()
    db = connection.settings_dict
    answer = probe(
        tmp_path,
        DATABASE_URL=subprocess_database_url(),
        CELERY_BROKER_URL=broker_url(),
        CACHE_URL="redis://127.0.0.1:6379/0",
        PROBE_QUERY="1",
    )
    assert answer["engine"] == "django.db.backends.postgresql" and answer["name"] == db["NAME"]
    assert answer["server"].startswith("PostgreSQL")
    assert answer["eager"] is False and answer["task_pid"] is None
    assert answer["queued_on_broker"] == 1  # the message waits on the broker for a worker
    assert answer["cache"] == "SharedClientRedisCache"
    assert answer["sessions"] == "cached_db"
    assert answer["training_queue"] == "gpu"
    assert answer["artifacts_on_arrival"] is True  # a worker tags new pairs
    assert settings.CELERY_TASK_ALWAYS_EAGER is False  # and this test process is in the same mode


def vendor_branches(source):
    """(line, source) of every comparison with a connection's `vendor` (a code path for one
    database and another for the rest)."""
    import ast

    tree = ast.parse(source)
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(isinstance(side, ast.Attribute) and side.attr == "vendor" for side in (node.left, *node.comparators))
    ]


def test_the_vendor_check_sees_a_branch():
    assert vendor_branches('if connection.vendor != "postgresql":\n    pass\n') == [
        (1, "connection.vendor != 'postgresql'")
    ]
    assert vendor_branches('answer = {"database": connection.vendor}\n') == []


def test_no_code_outside_migrations_branches_on_the_database_vendor():
    """PostgreSQL is the only database (settings refuse the rest): a branch on the vendor is a
    second path nothing runs."""
    skipped = {".venv", "var", "migrations", "tests", "node_modules"}
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {text}"
        for path in sorted(REPO_ROOT.rglob("*.py"))
        if not skipped & set(path.relative_to(REPO_ROOT).parts)
        for line, text in vendor_branches(path.read_text(encoding="utf-8"))
    ]
    assert found == []
