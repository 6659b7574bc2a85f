"""The typing records that hold one of several flags (`authorship.selectors.evidence_with_any_flag`,
the Pairs page's flag filters): exactly those records, found through the filter's own partial index
(`authorship.flag_lookup`), with the statistics of an empty table as with fresh ones, whatever the
order the flags are named in. A condition written otherwise than the index's is a scan of every
record (bench/RESULTS-issue76.md)."""

import pytest
from django.db import connection

from authorship.flag_lookup import FLAG_FILTERS, flag_filter_index_name
from authorship.judgements import TYPING_FLAGS, Flag
from authorship.models import WritingEvidence
from authorship.selectors import evidence_with_any_flag
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.plans import analysed_plan, nodes_reading

pytestmark = pytest.mark.django_db
UNFLAGGED = 6_000
TABLE = WritingEvidence._meta.db_table


def flag_scans(plan: dict) -> list[dict]:
    """The plan's nodes that read the typing records or an index of them."""
    found = list(nodes_reading(plan, TABLE))

    def index_scans(node: dict) -> list[dict]:
        own = [node] if node.get("Index Name") else []
        return own + [scan for child in node.get("Plans", []) for scan in index_scans(child)]

    return found + [scan for node in found for scan in index_scans(node) if scan not in found]


@pytest.mark.parametrize("statistics", ["stale", "fresh"])
@pytest.mark.parametrize("flag_filter", sorted(FLAG_FILTERS))
def test_the_records_holding_a_flag_filters_flags_come_from_its_own_index(make_worker, statistics, flag_filter):
    dataset, genre = writing_setup()
    (premise,) = add_premises(dataset, genre, 1)
    writer = make_worker()
    pair = dataset.pairs.create(premise=premise, pair_id="p0", hypothesis="A boat left.", author_label="neutral")
    with connection.cursor() as cursor:
        # Every record points at one pair (its one-record rule set aside in this test's transaction),
        # so that one statement fills the table as a crowd of writers would.
        cursor.execute(f"ALTER TABLE {TABLE} DROP CONSTRAINT authorship_writingevidence_pair_id_key")
        # Stale: the statistics of the table before the crowd wrote (the bench's build leaves them so).
        cursor.execute(f"ANALYZE {TABLE}")
    typing = {
        "pasted": [Flag.PASTED],
        "too fast and typed by a machine": [Flag.TOO_FAST, Flag.MACHINE_CADENCE],
        "not typed": [Flag.NOT_TYPED],
    }
    others = {"repeated": [Flag.REPEATED], "a copy": [Flag.COPY], "a copy, pasted": [Flag.COPY, Flag.PASTED]}
    records = [WritingEvidence(pair=pair, worker=writer, field_name="neutral") for _ in range(UNFLAGGED)]
    for name, flags in (*typing.items(), *others.items()):
        records.append(WritingEvidence(pair=pair, worker=writer, field_name=name, flags=[str(f) for f in flags]))
    WritingEvidence.objects.bulk_create(records, batch_size=5000)
    if statistics == "fresh":
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {TABLE}")
    expected = {
        "typing": [*typing, "a copy, pasted"],
        "repeated": ["repeated"],
        "copy": ["a copy", "a copy, pasted"],
    }[flag_filter]

    # Named in reverse: the condition is still the index's.
    found = evidence_with_any_flag(reversed(FLAG_FILTERS[flag_filter]))
    assert sorted(found.values_list("field_name", flat=True)) == sorted(expected)

    sql, params = found.order_by().values("pair_id").query.sql_with_params()
    with connection.cursor() as cursor:
        # A few thousand records fit in pages a sequential scan reads at once, as 432,000 do not; with
        # it off, a plan that no index serves is still a scan of the table.
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = analysed_plan(cursor, sql, params)
    scans = flag_scans(plan)
    assert "Seq Scan" not in [scan["Node Type"] for scan in scans], plan
    assert [scan["Index Name"] for scan in scans if scan.get("Index Name")] == [flag_filter_index_name(flag_filter)]


def test_the_typing_filter_is_every_typing_flag():
    assert set(FLAG_FILTERS["typing"]) == TYPING_FLAGS
