"""bench/throwaway_database.py: a bench's database is its own (bench_<label>_<pid> on the server
DATABASE_URL names) and is dropped when the bench ends, also when it fails with a connection open."""

import os

import psycopg2
import pytest

from bench.throwaway_database import database_url, throwaway_database
from tests.conftest import subprocess_database_url


def databases_on(server_url: str) -> set[str]:
    admin = psycopg2.connect(database_url(server_url, "postgres"))
    try:
        with admin.cursor() as cursor:
            cursor.execute("SELECT datname FROM pg_database")
            return {name for (name,) in cursor.fetchall()}
    finally:
        admin.close()


def test_a_failing_bench_leaves_no_database_behind_even_with_a_connection_open(monkeypatch):
    server = subprocess_database_url()
    monkeypatch.setenv("DATABASE_URL", server)
    name = f"bench_probe_run_{os.getpid()}"
    with pytest.raises(RuntimeError, match="the bench failed"), throwaway_database("Probe-run", migrated=False) as url:
        held = psycopg2.connect(url)  # as gunicorn's or Django's, still open at the end
        with held.cursor() as cursor:
            cursor.execute("SELECT current_database()")
            assert cursor.fetchone() == (name,)
        assert name in databases_on(server)
        raise RuntimeError("the bench failed")
    assert url == database_url(server, name)
    assert name not in databases_on(server)
    with pytest.raises(psycopg2.OperationalError), held.cursor() as cursor:
        cursor.execute("SELECT 1")  # the server ended that connection to drop the database
