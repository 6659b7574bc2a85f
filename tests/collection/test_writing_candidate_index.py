"""The writing claim's candidate lock (`collection.writing_claims.candidate_statement`) walks the
claim-order index of its narrow table, so a claim stops at the first premise with room instead of reading the
dataset's premises (PostgreSQL)."""

import pytest
from django.db import connection
from django.utils import timezone

from collection import writing_claims
from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = pytest.mark.django_db


def test_the_candidate_lock_reads_the_claim_order_index(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 5)
    sql, params = writing_claims.candidate_statement(make_worker(), timezone.now(), dataset=dataset)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "premise_claim_order_walk" in plan, plan
    assert "SKIP LOCKED" in sql
