"""The writing claim: a premise's live claims are counted by one index lookup of
that premise, whatever the statistics say (the validation claim's own test:
tests/validation/test_claim_plans_with_stale_statistics.py).

The claim table is analysed while every claim is history (submitted long ago), then the crowd's open
claims arrive and nothing analyses it again (autovacuum off, as after a bulk import): "open and
expiring after now" then looks like no row at all, and an index led by the expiry would be the
cheapest way to count a premise's live claims, walking every open claim for each premise the claim
passes. Every index of the claim table that serves the count is led by the premise."""

from django.db import connection
from django.utils import timezone

from collection import writing_claims
from collection.models import WritingClaim
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.plans import analysed_plan, nodes_reading

HISTORY, OPEN = 6000, 3000


def test_live_writing_claims_are_counted_by_premise_with_stale_statistics(make_worker):
    dataset, genre = writing_setup()
    free, held, _ = add_premises(dataset, genre, 3)
    worker, claimer = make_worker(), make_worker()
    table = WritingClaim._meta.db_table
    with connection.cursor() as cursor:
        # Many claims of one premise and worker (the rules of one claim per worker, and per worker
        # and premise, set aside in this test's transaction, so that two statements fill the table).
        cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT one_claim_per_worker_premise")
        cursor.execute("DROP INDEX one_open_writing_claim_per_worker")
        fill = (
            f"INSERT INTO {table} (token, worker_id, premise_id, status, created_at, expires_at, take_backs)"
            " SELECT gen_random_uuid(), %s, %s, %s, now(), now() + make_interval(mins => %s), 0"
            " FROM generate_series(1, %s)"
        )
        cursor.execute(fill, [claimer.pk, free.pk, "submitted", -3000, HISTORY])
        cursor.execute(f"ANALYZE {table}")  # the statistics of a table of history
        cursor.execute(fill, [claimer.pk, held.pk, "open", 20, OPEN])  # the crowd arrives
        sql, params = writing_claims.candidate_statement(worker, timezone.now(), dataset=dataset)
        plan = analysed_plan(cursor, sql, params)
    scans = list(nodes_reading(plan, WritingClaim._meta.db_table, alias="c"))
    assert scans, plan
    for scan in scans:
        assert "premise_id" in scan.get("Index Cond", ""), scan
        # One premise's open claims read, never the OPEN open claims of another premise.
        assert scan.get("Rows Removed by Filter", 0) + scan.get("Rows Removed by Index Recheck", 0) == 0, scan
