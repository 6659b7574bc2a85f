"""The validation claim's plan holds whatever the statistics say.

The statistics of the claim table are taken while every claim is history (submitted, expired
long ago), then the crowd's open claims arrive and nothing analyses the table again (autovacuum off,
as after a bulk import): the histogram of `expires_at` ends before now, and "open and expiring after
now" looks like no row at all. An index on the expiry alone was then the cheapest way to count a
candidate pair's live claims, and it walked every open claim for every candidate. The open claims'
index led by the pair (`valclaim_open`) makes each count one pair's lookup, and the plan never takes
the one led by the session (`valclaim_session_open`, the study page's) for it."""

from django.db import connection
from django.utils import timezone

from tests.plans import analysed_plan, nodes_reading
from validation.models import ValidationClaim
from validation.selectors import candidate_statement

from .validation_factories import make_pair

HISTORY, OPEN = 6000, 3000


def test_live_claims_are_counted_by_pair_with_stale_statistics(dataset, make_worker):
    pairs = [make_pair(dataset) for _ in range(3)]
    worker, claimer = make_worker(), make_worker()
    table = ValidationClaim._meta.db_table
    with connection.cursor() as cursor:
        # Many claims of one pair and worker (the one-claim-per-pair-and-worker rule set aside in
        # this test's transaction, so that the table can be filled in two statements).
        cursor.execute(f"ALTER TABLE {table} DROP CONSTRAINT one_validation_claim_per_pair_worker")
        fill = (
            f"INSERT INTO {table} (pair_id, worker_id, status, expires_at, created_at, is_catch_trial, credited, batch)"
            " SELECT %s, %s, %s, now() + make_interval(mins => %s), now(), false, false, gen_random_uuid()"
            " FROM generate_series(1, %s)"
        )
        cursor.execute(fill, [pairs[0].pk, claimer.pk, "submitted", -3000, HISTORY])
        cursor.execute(f"ANALYZE {table}")  # the statistics of a table of history
        cursor.execute(fill, [pairs[1].pk, claimer.pk, "open", 20, OPEN])  # the crowd arrives
        sql, params = candidate_statement(worker, timezone.now(), dataset=dataset, limit=15)
        plan = analysed_plan(cursor, sql, params)
    scans = list(nodes_reading(plan, ValidationClaim._meta.db_table, alias="c"))
    assert scans, plan
    for scan in scans:
        assert "pair_id" in scan.get("Index Cond", ""), scan
        # One pair's open claims read, never the OPEN open claims of other pairs.
        assert scan.get("Rows Removed by Filter", 0) + scan.get("Rows Removed by Index Recheck", 0) == 0, scan
