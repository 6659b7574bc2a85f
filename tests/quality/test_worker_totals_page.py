"""The bonus page's money per worker (`quality.bonuses.WorkerTotals`) is ordered and cut in the
database: a page is the whole list, in the order written down, cut to the page, and it is read in
the same two statements whatever the number of workers."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext

from quality import bonuses
from quality.bonuses import CatchStanding
from quality.flags import WorkerFlag
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db

# Names whose code point order differs from a dictionary's (capitals before small letters, an
# accented letter after every plain one), so a collation-sorted list would fail here.
NAMES = ["bea", "Zed", "amy", "Émile", "Bob", "carl", "Amy", "dan", "eve", "Éva", "fay", "gus"]
# How many catch trials each worker matched (a bonus of 0.25 each): ties, so names decide.
MATCHED = [2, 2, 2, 1, 0, 3, 1, 2, 0, 3, 1, 2]


def answers(pairs):
    return [SimpleNamespace(pair_id=pair.pk) for pair in pairs]


@pytest.fixture
def crowd(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(3)]
    study = make_study(dataset, bonus="0.25")
    workers = []
    for index, (name, matched) in enumerate(zip(NAMES, MATCHED, strict=True)):
        # Half are named by their market id, half by their user name: the page names them either way.
        worker = make_worker(username=f"user-{name}", external_id=name) if index % 2 else make_worker(username=name)
        session = session_for(study, worker, f"S{index}")
        if matched:
            bonuses.record_catch_bonuses(worker, session, answers(traps[:matched]))
        workers.append(worker)
    paid = bonuses.unpaid(study).filter(worker=workers[5]).earliest("pk")
    bonuses.mark_paid(study, [paid.pk])
    # One worker with catch answers and no bonus; two flagged catch-only (listed last whatever
    # they are owed).
    onlooker = make_worker(username="hal")
    flag = WorkerFlag(worker=0, kind="catch_only", reason="right on the catch trials only", figures={})
    standings = {
        onlooker.pk: CatchStanding(seen=2, matched=0),
        workers[5].pk: CatchStanding(seen=3, matched=3, catch_only=flag),
        workers[0].pk: CatchStanding(seen=2, matched=2, catch_only=flag),
        workers[1].pk: CatchStanding(seen=4, matched=2),
        workers[8].pk: CatchStanding(seen=1, matched=0),
    }
    return SimpleNamespace(study=study, workers=workers, standings=standings)


def ordered_here(study, standings):
    """The list as the page's order words it, built here from the tally's money per worker."""
    from corpus.models import Worker

    money = bonuses.worker_money(study)
    rows = []
    for worker in Worker.objects.filter(pk__in=set(money) | set(standings)):
        m = money.get(worker.pk, {})
        unpaid = sum(
            Decimal(m.get(key, 0)) * sign for key, sign in (("earned", 1), ("paid", -1), ("held", -1), ("refused", -1))
        )
        flagged = standings.get(worker.pk, CatchStanding()).catch_only is not None
        rows.append((flagged, -unpaid, str(worker), worker.pk))
    return [name for _, _, name, _ in sorted(rows)]


def test_every_page_of_worker_totals_is_the_whole_list_cut_in_its_order(crowd):
    expected = ordered_here(crowd.study, crowd.standings)
    # Every worker with money or catch answers: not Bob (neither), but the onlooker (answers only)
    # and eve (an answer, no bonus).
    assert len(expected) == len(NAMES) and "Bob" not in expected and {"hal", "eve"} <= set(expected)
    totals = bonuses.WorkerTotals(crowd.study, crowd.standings)
    assert len(totals) == len(expected)
    pages = Paginator(totals, 5)
    read = [row["name"] for number in pages.page_range for row in pages.page(number)]
    assert read == expected
    assert [row["name"] for row in bonuses.worker_totals(crowd.study, crowd.standings)] == expected
    assert totals[len(expected) - 1]["name"] == expected[-1]


def test_a_worker_row_carries_its_catch_figures_and_money(crowd):
    rows = {row["name"]: row for row in bonuses.worker_totals(crowd.study, crowd.standings)}
    carl = rows["carl"]
    assert (carl["catch_seen"], carl["catch_matched"], carl["catch_accuracy"]) == (3, 3, 1.0)
    assert (carl["earned"], carl["paid"], carl["unpaid"]) == (Decimal("0.75"), Decimal("0.25"), Decimal("0.50"))
    assert carl["catch_only"] is not None
    assert (rows["hal"]["earned"], rows["hal"]["unpaid"], rows["hal"]["catch_accuracy"]) == (0, 0, 0.0)
    assert (rows["dan"]["catch_seen"], rows["dan"]["catch_accuracy"]) == (0, None)


def test_a_page_of_worker_totals_is_read_in_two_statements_whatever_the_crowd(crowd, make_worker):
    def statements_for_page(number):
        with CaptureQueriesContext(connection) as ctx:
            page = Paginator(bonuses.WorkerTotals(crowd.study, crowd.standings), 5).get_page(number)
            names = [row["name"] for row in page]
        return len(ctx), names

    before, _ = statements_for_page(2)
    for index in range(20):
        bonuses.give_discretionary_bonus(session_for(crowd.study, make_worker(), f"M{index}"), "0.10", "Thanks.")
    after, names = statements_for_page(2)
    assert before == after == 2
    assert len(names) == 5


def test_worker_totals_read_one_row_from_either_end_and_iterate_in_one_read(crowd):
    totals = bonuses.WorkerTotals(crowd.study, crowd.standings)
    whole = bonuses.worker_totals(crowd.study, crowd.standings)
    assert (totals[0], totals[-1], totals[-len(whole)]) == (whole[0], whole[-1], whole[0])
    with pytest.raises(IndexError):
        totals[len(whole)]
    with pytest.raises(IndexError):
        totals[-len(whole) - 1]
    with CaptureQueriesContext(connection) as ctx:
        assert list(totals) == whole
    assert len(ctx) == 1  # counted already: the rows in one statement


def test_worker_totals_count_and_list_only_the_studys_workers_and_cut_empty_slices_empty(crowd, make_worker):
    other = make_study(crowd.study.dataset, bonus="0.25", slug="other-study")
    stranger = make_worker(username="stranger")
    bonuses.give_discretionary_bonus(session_for(other, stranger, "O1"), "5.00", "Thanks.")
    totals = bonuses.WorkerTotals(crowd.study, crowd.standings)

    assert len(totals) == len(NAMES)
    assert "stranger" not in [row["name"] for row in totals]
    assert totals[3:3] == [] and totals[len(NAMES) : len(NAMES) + 5] == []
    with pytest.raises(ValueError, match="a page at a time"):
        totals[::2]
    assert {row["market"] for row in totals} == {crowd.workers[0].market}
