"""A transactional test's flush (`tests/conftest.py`, `_flush_by_delete`) leaves the next test an
empty database with its reference rows, whichever way it empties a table: DELETE for a small one,
TRUNCATE for one over `LARGE_TABLE_BYTES`. The two tests run in this order, in one process."""

import pytest
from django.db import connection

from corpus.models import Dataset, Genre
from tests.conftest import LARGE_TABLE_BYTES


def table_bytes(table):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s::regclass)", [table])
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_test_leaves_a_large_table_and_a_small_one_behind():
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO django_session (session_key, session_data, expire_date) "
            "SELECT 'flush-' || n, repeat('x', 200), now() FROM generate_series(1, 20000) n"
        )
    Dataset.objects.create(slug="left-behind", name="left behind")
    assert table_bytes("django_session") > LARGE_TABLE_BYTES  # emptied by TRUNCATE
    assert table_bytes("collection_dataset") < LARGE_TABLE_BYTES  # emptied by DELETE


@pytest.mark.django_db(transaction=True)
def test_the_next_test_finds_neither_and_the_reference_rows_there():
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM django_session")
        assert cursor.fetchone()[0] == 0
    assert not Dataset.objects.filter(slug="left-behind").exists()
    assert Genre.objects.exists()
