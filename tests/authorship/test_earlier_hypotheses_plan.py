"""A submit outside a study checks the new hypotheses for repeats against the writer's latest ones
(`authorship.selectors.earlier_hypotheses_query`). A writer new to a large table of typing records
is answered from their own range of the index `evidence_worker_latest`, never by walking the
primary key back through every other writer's records to learn that they have none."""

from django.db import connection

from authorship.models import WritingEvidence
from authorship.selectors import earlier_hypotheses_query
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.plans import analysed_plan, nodes_reading

OTHER_WRITERS, RECORDS = 40, 10_000


def test_a_new_writers_latest_hypotheses_are_read_from_their_own_range(make_worker):
    dataset, genre = writing_setup()
    (premise,) = add_premises(dataset, genre, 1)
    others = [make_worker() for _ in range(OTHER_WRITERS)]
    pair = dataset.pairs.create(premise=premise, pair_id="p0", hypothesis="A boat left.", author_label="neutral")
    with connection.cursor() as cursor:
        # Every record points at one pair (its one-record rule set aside in this test's transaction),
        # so that one statement fills the table as a crowd of writers would.
        cursor.execute(
            f"ALTER TABLE {WritingEvidence._meta.db_table} DROP CONSTRAINT authorship_writingevidence_pair_id_key"
        )
    WritingEvidence.objects.bulk_create(
        (WritingEvidence(pair=pair, worker=others[n % OTHER_WRITERS], field_name="neutral") for n in range(RECORDS)),
        batch_size=5000,
    )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {WritingEvidence._meta.db_table}")
        sql, params = earlier_hypotheses_query(make_worker(), None).query.sql_with_params()
        plan = analysed_plan(cursor, sql, params)
    scans = list(nodes_reading(plan, WritingEvidence._meta.db_table))
    assert scans, plan
    for scan in scans:
        assert scan.get("Index Name") == "evidence_worker_latest", scan
        assert scan.get("Rows Removed by Filter", 0) == 0, scan
