"""The export's reading: the lines the database builds in one statement
(database_lines) hold exactly the rows of `selectors.rows_for_export` (pages of the ORM join, one
row per label: the reference reader), on the edge cases the label rules have: excluded workers,
labels awaiting a market's word, a healed pair (a replacement label beyond position five),
adjudicated and retired pairs, unvalidated pairs, ratings, and every filter that changes which
pairs are read."""

import pytest

from corpus.models import RETIRED_LABEL, Label, Pair, ValidationLabel
from modeling.snapshots import selectors
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import FIVE_C, FIVE_E, add_pair, add_premise, genre
from tests.modeling.test_export_sql_lines import assert_same_files

L = Label


@pytest.fixture
def edge_corpus(small_corpus, make_worker):
    mini = small_corpus["mini"]
    fiction = genre("fiction")
    excluded, counted, other = make_worker(is_excluded=True), make_worker(), make_worker()
    premise = add_premise(mini, fiction, "dev", "Edge cases live here.", prompt_id="edge")
    # An excluded worker's label at position 2 and a healing replacement at position 6.
    healed = add_pair(mini, premise, "Healed pair.", [*FIVE_E, L.CONTRADICTION], pair_id="edge-healed")
    # Written straight to the table: the label carries its exclusion's mark, as the service sets it.
    ValidationLabel.objects.filter(pair=healed, position=2).update(worker=excluded, excluded=True)
    # A label awaiting the market's word (does not count) and one by a counted worker.
    waiting = add_pair(mini, premise, "Waiting label.", FIVE_C, pair_id="edge-waiting")
    ValidationLabel.objects.filter(pair=waiting, position=4).update(worker=counted, awaiting_market_session=7)
    ValidationLabel.objects.filter(pair=waiting, position=3).update(worker=other)
    # A pair a researcher decided, and one retired (in no snapshot).
    decided = add_pair(mini, premise, "Decided pair.", FIVE_E, pair_id="edge-decided")
    Pair.objects.filter(pk=decided.pk).update(adjudicated_label=L.CONTRADICTION)
    retired = add_pair(mini, premise, "Retired pair.", FIVE_C, pair_id="edge-retired")
    Pair.objects.filter(pk=retired.pk).update(adjudicated_label=RETIRED_LABEL)
    # Ratings on some labels (what an ordinal dataset's rows carry).
    ValidationLabel.objects.filter(pair=decided, position__in=(1, 3)).update(ordinal=4)
    add_pair(mini, premise, "Unvalidated.", [L.NEUTRAL], pair_id="edge-unvalidated", needs_validation=False)
    return {"healed": healed, "waiting": waiting, "retired": retired}


FILTER_SETS = [
    {},
    {"splits": ["dev"]},
    {"gold_only": True},
    {"min_labels": 5},
    {"genres": ["letters"]},
    {"full_agreement": True},
]


@pytest.mark.parametrize("filters", FILTER_SETS, ids=lambda f: ",".join(f) or "no-filters")
@pytest.mark.parametrize("page_size", [2, 5000])
def test_the_database_lines_hold_the_rows_of_the_reference_reader(edge_corpus, filters, page_size):
    snapshot = export_snapshot(create_snapshot(None, filters=filters), page_size=page_size)
    assert_same_files(snapshot)
    assert snapshot.row_count, "the filters left rows to compare"


def test_the_edge_cases_are_read_as_the_label_rules_say(edge_corpus):
    rows = {values[0]: labels for values, labels in selectors.rows_for_export(selectors.pairs_for_export())}
    assert edge_corpus["retired"].pk not in rows
    # Healed: the excluded worker's label is out, the replacement fills the fifth slot.
    assert [slot for slot, *_ in rows[edge_corpus["healed"].pk]] == [1, 2, 3, 4, 5]
    assert rows[edge_corpus["healed"].pk][-1][1] == L.CONTRADICTION
    # Waiting for the market: position 4 is not read.
    assert [slot for slot, *_ in rows[edge_corpus["waiting"].pk]] == [1, 2, 3, 5]


def test_rows_added_after_the_cap_are_not_read(edge_corpus):
    pairs = selectors.pairs_for_export()
    upper_id = edge_corpus["waiting"].pk
    assert max(values[0] for values, _ in selectors.rows_for_export(pairs, upper_id=upper_id)) == upper_id


def test_an_export_of_the_edge_cases_keeps_its_progress_and_counts(edge_corpus):
    seen = []
    snapshot = export_snapshot(create_snapshot(None), progress=lambda done, total: seen.append((done, total)))
    assert snapshot.status == "done" and seen[-1] == (snapshot.row_count, snapshot.row_count)
