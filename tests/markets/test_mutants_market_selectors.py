"""The market panel's and the bonus page's reads (markets/selectors.py), at the edges mutmut found
unguarded: which bonuses each state of the payment machine holds and what they add up to, for a
study with a connection and one without, the panel's lists of sessions and what they leave out,
how long each list may grow, and what an unsure bulk bonus says about when it may be read as not
paid."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db import connection as db_connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import Market, Worker
from crowd.holds import decide_code_holds, hold
from crowd.models import CodeHold, CodeHoldDecision, SessionEnding, Study, StudySession
from dashboard.queries import study_costs
from dashboard.queries.costs import Money
from markets import connections, selectors
from markets.models import (
    BatchState,
    BonusBatch,
    BonusPayment,
    MarketCall,
    MarketConnection,
    Payer,
    PaymentState,
    ReviewDecision,
    ReviewState,
    SessionReview,
)
from quality import bonuses
from quality.bonus_lines import ids_hash
from quality.guessers import GUESSER
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.plans import analysed_plan, nodes_reading

from .conftest import make_study

pytestmark = pytest.mark.django_db

STUDY_ID = "5fa0000000000000000000a1"


def connect(study: Study) -> MarketConnection:
    return connections.save_connection(study, market="prolific", market_study_id=STUDY_ID, token="t")


def visit(study: Study, name: str, *, complete: bool = True, closed: bool = False) -> StudySession:
    user = User.objects.create_user(username=f"{study.slug}-{name}")
    worker = Worker.objects.create(user=user, market=Market.PROLIFIC, external_id=f"{study.slug}-{name}")
    now = timezone.now()
    return StudySession.objects.create(
        study=study,
        worker=worker,
        external_session_id=f"submission-{name}",
        completed_at=now if complete else None,
        closed_at=now if closed else None,
        ended_as=SessionEnding.RETURNED if closed else "",
    )


def earned(study: Study, session: StudySession, amount: str, currency: str = "GBP") -> BonusEntry:
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=session.worker,
        study=study,
        study_session=session,
        amount=Decimal(amount),
        currency=currency,
        cause=BonusCause.CATCH_TRIAL,
        reason=f"Catch trial matched in study {study.slug}",
    )


def paying(
    row: BonusEntry, connection: MarketConnection, state: str, payer: str = Payer.API, last_error: str = ""
) -> BonusEntry:
    BonusPayment.objects.create(
        earned=row,
        connection=connection,
        state=state,
        payer=payer,
        request_token=f"nli-bonus-{row.pk}",
        lease_until=timezone.now(),
        last_error=last_error,
    )
    return row


def paid(row: BonusEntry) -> BonusEntry:
    return BonusEntry.objects.create(
        kind=BonusKind.PAID,
        worker=row.worker,
        study=row.study,
        study_session=row.study_session,
        amount=row.amount,
        currency=row.currency,
        cause=BonusCause.OTHER,
        reason="Paid",
        pays=row,
    )


def figure(n: int, total: str) -> dict[str, object]:
    return {"n": n, "total": Decimal(total)}


@pytest.fixture
def book():
    """A connected study's bonuses, one in each place of the payment machine (amounts that add up
    to a different total for every set), and another study's like them."""
    study = make_study()
    connection = connect(study)
    done = visit(study, "done")
    waiting = visit(study, "waiting")
    hold(waiting, GUESSER, "Labels at chance so far (sequential guesser test).")
    rows = {
        "free": earned(study, done, "0.01"),
        "released": paying(
            earned(study, done, "0.02"), connection, PaymentState.RELEASED, last_error="Incorrect id: nobody"
        ),
        "api_claimed": paying(earned(study, done, "0.04"), connection, PaymentState.CLAIMED),
        "api_sent": paying(earned(study, done, "0.08"), connection, PaymentState.SENT),
        "api_unknown": paying(earned(study, done, "0.16"), connection, PaymentState.UNKNOWN),
        "file_sent": paying(earned(study, done, "0.32"), connection, PaymentState.SENT, Payer.FILE),
        "file_claimed": paying(earned(study, done, "0.64"), connection, PaymentState.CLAIMED, Payer.FILE),
        "aside": paying(earned(study, done, "1.28"), connection, PaymentState.ASIDE, last_error="Refused"),
        "confirmed": earned(study, done, "2.56"),
        "held": earned(study, waiting, "5.12"),
        "held_sent": paying(earned(study, waiting, "10.24"), connection, PaymentState.SENT),
    }
    rows["paid"] = paid(rows["confirmed"])
    other = make_study("other-study")
    other_connection = connect(other)
    stranger = visit(other, "stranger")
    paying(earned(other, stranger, "20.48"), other_connection, PaymentState.SENT, Payer.FILE)
    paying(earned(other, stranger, "40.96"), other_connection, PaymentState.CLAIMED)
    paying(earned(other, stranger, "81.92"), other_connection, PaymentState.ASIDE)
    paying(earned(other, stranger, "163.84"), other_connection, PaymentState.RELEASED, last_error="Other study")
    paid(earned(other, stranger, "327.68"))
    earned(other, stranger, "655.36")
    return study, rows


def ids(rows) -> list[int]:
    return [row.pk for row in rows]


# --- each state of the payment machine -----------------------------------------------------------


def test_each_state_lists_its_own_bonuses_of_the_study(book):
    study, rows = book

    assert ids(selectors.owed_entries(study)) == ids([rows["free"], rows["released"]])
    assert ids(selectors.held_by_files(study)) == ids([rows["file_sent"]])
    assert ids(selectors.held_by_the_api(study)) == ids([rows["api_claimed"], rows["api_sent"], rows["api_unknown"]])
    assert ids(selectors.set_aside(study)) == ids([rows["aside"]])
    in_flight = ["api_claimed", "api_sent", "api_unknown", "file_sent", "file_claimed", "held_sent"]
    assert sorted(ids(selectors.in_flight_entries(study))) == sorted(ids(rows[name] for name in in_flight))
    assert ids(selectors.paid_entries(study)) == ids([rows["paid"]])


def test_no_payer_may_hold_a_paid_bonus_nor_a_bonus_be_paid_while_a_payer_holds_it(book):
    study, rows = book
    connection = MarketConnection.objects.get(study=study)
    before = selectors.machine_figures(study)
    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # checked at each statement, not at the commit
    strays = {
        "a paid bonus held by a file": lambda: paying(rows["confirmed"], connection, PaymentState.SENT, Payer.FILE),
        "a paid row held by the API": lambda: paying(rows["paid"], connection, PaymentState.CLAIMED),
        "a bonus the API holds paid": lambda: paid(rows["api_sent"]),
        "a set-aside bonus paid and still held": lambda: paid(rows["aside"]),
    }
    for name, stray in strays.items():
        with pytest.raises(IntegrityError, match="paid"), transaction.atomic():
            stray()
        assert selectors.machine_figures(study) == before, name
    # Paid, then its payment deleted in the same transaction, as the payment machine confirms it:
    # checked at the commit, allowed.
    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")
    with transaction.atomic():
        paid(rows["aside"])
        BonusPayment.objects.filter(earned=rows["aside"]).delete()
    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    after = selectors.machine_figures(study)
    assert after["aside"] == figure(0, "0") and after["paid"] == figure(2, "3.84")


def test_a_connected_studys_figures_count_and_add_up_each_state(book):
    study, _ = book
    expected = {
        "owed": figure(2, "0.03"),
        "in_flight": figure(6, "11.48"),
        "aside": figure(1, "1.28"),
        "paid": figure(1, "2.56"),
    }

    assert selectors.machine_figures(study) == expected
    assert selectors.machine_figures(study, connected=True) == expected


def test_figures_told_there_is_no_connection_have_every_payable_bonus_owed_and_nothing_in_flight(book):
    study, _ = book

    assert selectors.machine_figures(study, connected=False) == {
        "owed": figure(8, "2.55"),
        "in_flight": figure(0, "0"),
        "aside": figure(0, "0"),
        "paid": figure(1, "2.56"),
    }


def test_a_study_without_a_connection_owes_every_payable_bonus():
    study = make_study()
    done = visit(study, "done")
    waiting = visit(study, "waiting")
    hold(waiting, GUESSER, "Labels at chance so far (sequential guesser test).")
    owed = [earned(study, done, "0.10"), earned(study, done, "0.20")]
    earned(study, waiting, "0.40")
    paid(earned(study, done, "0.80"))

    figures = selectors.machine_figures(study)
    money = selectors.bonus_page_money(study)

    assert figures == {
        "owed": figure(2, "0.30"),
        "in_flight": figure(0, "0"),
        "aside": figure(0, "0"),
        "paid": figure(1, "0.80"),
    }
    assert ids(money.pop("confirmable")) == ids(owed)
    assert [(group.bonuses, group.amount) for group in money.pop("confirmable_groups")] == [(2, Decimal("0.30"))]
    assert money == {"api": 0, "files": 0, "aside": [], "figures": figures}


def test_the_bonus_page_confirms_by_hand_what_no_payer_holds_what_files_sent_and_what_was_set_aside(book):
    study, rows = book

    money = selectors.bonus_page_money(study)

    assert ids(money["confirmable"]) == ids(rows[name] for name in ("free", "released", "file_sent", "aside"))
    # Counted: the page says how many, and a downloaded file may have sent every bonus of the study.
    assert (money["api"], money["files"]) == (3, 1)
    assert ids(money["aside"]) == ids([rows["aside"]])
    assert money["aside"][0].market_payment.last_error == "Refused"
    assert money["figures"] == selectors.machine_figures(study)
    # The tally's groups less what the API payer and an unsent file hold: the rows' own groups.
    assert money["confirmable_groups"] == bonuses.unpaid_groups(money["confirmable"])
    # Asked alone, the groups read what payers hold themselves, to the same answer.
    assert selectors.confirmable_groups(study, True) == money["confirmable_groups"]
    assert [group.bonuses for group in money["confirmable_groups"]] == [4]
    assert set(money) == {"confirmable", "confirmable_groups", "api", "files", "aside", "figures"}


def test_the_held_bonuses_one_read_sums_each_set_as_its_queryset_lists_it(book):
    study, rows = book
    held = selectors.held_bonuses(study)

    def summed(*sets: str) -> tuple[int, Decimal, int]:
        groups = [group for group in held if all(getattr(group, name) for name in sets)]
        total = sum((group.amount for group in groups), Decimal("0"))
        return sum(group.bonuses for group in groups), total, sum(group.ids_hash for group in groups)

    def listed(entries) -> tuple[int, Decimal, int]:
        entries = list(entries)
        return len(entries), sum((e.amount for e in entries), Decimal("0")), int(ids_hash(e.pk for e in entries))

    # Every unpaid bonus a payer holds (not released, not paid), payable or not; nothing else.
    in_hand = ["api_claimed", "api_sent", "api_unknown", "file_sent", "file_claimed", "aside", "held_sent"]
    assert summed() == listed(rows[name] for name in in_hand)
    assert summed("payable") == listed(rows[name] for name in in_hand if name != "held_sent")
    assert summed("in_flight") == listed(selectors.in_flight_entries(study))
    assert summed("payable", "by_the_api") == listed(selectors.held_by_the_api(study))
    assert summed("payable", "by_files") == listed(selectors.held_by_files(study))
    assert summed("payable", "aside") == listed(selectors.set_aside(study))
    held_by_hand = [
        e for e in selectors.confirmable_by_hand(study, connected=True) if e.pk in ids(rows[n] for n in in_hand)
    ]
    assert summed("payable", "confirmable") == listed(held_by_hand) != (0, Decimal("0"), 0)
    # One row per session, cause and sets: the two sessions' bonuses apart, in that order.
    assert {group.session_id for group in held} == {rows["aside"].study_session_id, rows["held_sent"].study_session_id}
    sets = ("payable", "in_flight", "by_the_api", "by_files", "aside", "confirmable")
    assert held == sorted(held, key=lambda group: (group.session_id, group.cause, *(getattr(group, s) for s in sets)))
    # The tally rows in flight are the study's own: the other study's payments in flight are not read.
    in_flight = selectors.in_flight_tally(study)
    assert {row.connection_id for row in in_flight} == {MarketConnection.objects.get(study=study).pk}
    assert sum(row.amount for row in in_flight) == listed(selectors.in_flight_entries(study))[1]


def test_the_bonus_page_names_the_first_set_aside_bonuses_and_counts_them_all():
    study, other = make_study(), make_study("other-study")
    # Another study's bonuses set aside before any of this one's: never named on this study's page.
    others = connect(other)
    paying(earned(other, visit(other, "theirs"), "0.10"), others, PaymentState.ASIDE, last_error="Theirs")
    connection = connect(study)
    done = visit(study, "done")
    waiting = visit(study, "waiting")
    hold(waiting, GUESSER, "Labels at chance so far (sequential guesser test).")
    # Set aside first, but its session's code is held: not payable, so neither named nor counted.
    paying(earned(study, waiting, "0.10"), connection, PaymentState.ASIDE, last_error="Refused, and held")
    aside = [
        paying(earned(study, done, "0.10"), connection, PaymentState.ASIDE, last_error=f"Refused {n}")
        for n in range(selectors.ASIDE_NAMED + 2)
    ]

    money = selectors.bonus_page_money(study)

    assert ids(money["aside"]) == ids(aside[: selectors.ASIDE_NAMED])
    assert [entry.market_payment.last_error for entry in money["aside"][:2]] == ["Refused 0", "Refused 1"]
    assert money["figures"]["aside"] == figure(len(aside), f"{Decimal('0.10') * len(aside):.2f}")


def test_the_first_set_aside_are_read_in_the_index_order_and_no_further():
    """The page names the first ASIDE_NAMED: the index of a connection's payments by state gives
    them in the order payers took them, so the read stops there, however many were set aside."""
    study = make_study()
    connection = connect(study)
    session = visit(study, "done")
    for n in range(3 * selectors.ASIDE_NAMED):
        paying(earned(study, session, "0.10"), connection, PaymentState.ASIDE, last_error=f"Refused {n}")

    with CaptureQueriesContext(db_connection) as captured:
        named = selectors.first_set_aside(connection.pk, selectors.ASIDE_NAMED)
    with db_connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = analysed_plan(cursor, captured.captured_queries[-1]["sql"])

    assert len(named) == selectors.ASIDE_NAMED
    (payments,) = nodes_reading(plan, BonusPayment._meta.db_table)
    assert payments["Index Name"] == "bonus_payment_state"
    assert payments["Actual Rows"] == selectors.ASIDE_NAMED


def test_every_study_is_listed_by_slug_with_its_own_connection_or_none():
    later, unconnected, earlier = make_study("b-study"), make_study("c-study"), make_study("a-study")
    first, second = connect(earlier), connect(later)

    listed = selectors.connected_studies()

    assert [study.slug for study in listed] == ["a-study", "b-study", "c-study"]
    assert [study.connection for study in listed] == [first, second, None]  # type: ignore[attr-defined]
    assert unconnected.pk == listed[2].pk


# --- the market panel ------------------------------------------------------------------------------


def review(session: StudySession, state: str) -> SessionReview:
    return SessionReview.objects.create(study_session=session, decision=ReviewDecision.APPROVE, state=state)


def test_the_panel_sorts_a_studys_sessions_into_to_approve_held_decided_and_closed(book):
    study, _ = book
    done = StudySession.objects.get(study=study, external_session_id="submission-done")
    waiting = StudySession.objects.get(study=study, external_session_id="submission-waiting")
    released, refused = visit(study, "released"), visit(study, "refused")
    for session in (released, refused):
        hold(session, GUESSER, "Labels at chance so far (sequential guesser test).")
    decide_code_holds([released.pk], CodeHoldDecision.RELEASED)
    decide_code_holds([refused.pk], CodeHoldDecision.REFUSED)
    closed_complete = visit(study, "closed-complete", closed=True)
    closed_returned = visit(study, "returned", complete=False, closed=True)
    visit(study, "still-working", complete=False)
    queued, confirmed = visit(study, "queued"), visit(study, "confirmed")
    review(queued, ReviewState.SENT)
    review(confirmed, ReviewState.CONFIRMED)
    held_decided = visit(study, "held-decided")
    hold(held_decided, GUESSER, "Labels at chance so far (sequential guesser test).")
    review(held_decided, ReviewState.FAILED)
    visit(Study.objects.get(slug="other-study"), "other-closed", closed=True)

    panel = selectors.panel(study)

    assert sorted(ids(panel["to_approve"])) == sorted(ids([done, released]))
    assert ids(panel["held"]) == ids([waiting])
    assert list(panel["held"][0].code_holds.all()) == list(CodeHold.objects.filter(session=waiting))
    assert sorted(ids(panel["decided"])) == sorted(ids([queued, confirmed, held_decided]))
    assert panel["unsure_reviews"] == 1
    assert sorted(ids(panel["closed"])) == sorted(ids([closed_complete, closed_returned]))
    assert panel["connection"] == MarketConnection.objects.get(study=study)


def test_the_panels_money_and_the_refusals_it_names_are_the_studys_own(book):
    study, rows = book
    connection = MarketConnection.objects.get(study=study)
    paying(earned(study, rows["free"].study_session, "0.01"), connection, PaymentState.RELEASED)
    # (A payment of a paid bonus, whose refusal would not be the study's to name, the database refuses.)

    panel = selectors.panel(study)

    assert panel["money"] == {"owed": figure(3, "0.04"), "in_flight": figure(6, "11.48"), "paid": figure(1, "2.56")}
    assert panel["refused"] == ["Incorrect id: nobody"]


def test_the_panel_of_a_study_without_a_connection_has_no_batches_calls_or_refusals():
    study = make_study()
    visit(study, "done")

    panel = selectors.panel(study)

    assert panel["connection"] is None
    assert (panel["unsure_batches"], panel["calls"], panel["refused"]) == ([], [], [])
    assert panel["money"] == {"owed": figure(0, "0"), "in_flight": figure(0, "0"), "paid": figure(0, "0")}


def test_the_panel_shows_the_studys_own_calls_newest_first_and_no_more_than_twenty(book):
    study, _ = book
    connection = MarketConnection.objects.get(study=study)
    other = MarketConnection.objects.exclude(pk=connection.pk).get()
    made = [MarketCall.objects.create(connection=connection, action=f"call-{n}") for n in range(21)]
    MarketCall.objects.create(connection=other, action="other-study")

    calls = selectors.panel(study)["calls"]

    assert [call.action for call in calls] == [f"call-{n}" for n in range(20, 0, -1)]
    assert made[0] not in calls


def test_the_panel_names_the_five_latest_refusals_each_once(book):
    study, rows = book
    connection = MarketConnection.objects.get(study=study)
    for error in ("e0", "e1", "e2", "e3", "e4", "e5", "e3", "e5"):
        paying(earned(study, rows["free"].study_session, "0.01"), connection, PaymentState.RELEASED, last_error=error)

    assert selectors.panel(study)["refused"] == ["e5", "e3", "e4", "e2", "e1"]


def test_the_panels_session_lists_stop_at_their_lengths():
    study = make_study()
    now = timezone.now()
    users = User.objects.bulk_create([User(username=f"many-{n}") for n in range(852)])
    workers = Worker.objects.bulk_create(
        [Worker(user=user, market=Market.PROLIFIC, external_id=f"many-{n}") for n, user in enumerate(users)]
    )

    def sessions(chosen, **fields):
        return StudySession.objects.bulk_create(
            [StudySession(study=study, worker=w, external_session_id=f"s-{w.pk}", **fields) for w in chosen]
        )

    sessions(workers[:501], completed_at=now)
    held = sessions(workers[501:702], completed_at=now)
    CodeHold.objects.bulk_create([CodeHold(session=s, kind=GUESSER, text="held") for s in held])
    decided = sessions(workers[702:753], completed_at=now)
    SessionReview.objects.bulk_create(
        [SessionReview(study_session=s, decision=ReviewDecision.APPROVE, state=ReviewState.SENT) for s in decided]
    )
    sessions(workers[753:804], closed_at=now, ended_as=SessionEnding.RETURNED)

    panel = selectors.panel(study)

    assert (len(panel["to_approve"]), len(panel["held"]), len(panel["decided"]), len(panel["closed"])) == (
        500,
        200,
        50,
        50,
    )
    assert panel["unsure_reviews"] == 51


# --- unsure bulk bonuses ----------------------------------------------------------------------------


def test_an_unsure_bulk_bonus_may_be_read_as_not_paid_only_after_the_record_settles(settings, book):
    settings.MARKET_RECORD_SETTLE_SECONDS = 900
    study, _ = book
    connection = MarketConnection.objects.get(study=study)
    other = MarketConnection.objects.exclude(pk=connection.pk).get()
    sent_at = timezone.now() - timedelta(minutes=3)
    lease = timezone.now()
    unsent = BonusBatch.objects.create(connection=connection, state=BatchState.PAYING, lease_until=lease)
    sent = BonusBatch.objects.create(
        connection=connection, state=BatchState.PAYING, lease_until=lease, pay_sent_at=sent_at, market_bulk_id="b-1"
    )
    for state in (BatchState.NEW, BatchState.PAID, BatchState.ABANDONED):
        BonusBatch.objects.create(connection=connection, state=state, lease_until=lease, pay_sent_at=sent_at)
    BonusBatch.objects.create(connection=other, state=BatchState.PAYING, lease_until=lease, pay_sent_at=sent_at)

    batches = selectors.unsure_batches(connection)

    assert ids(batches) == ids([unsent, sent])
    assert batches[0].not_paid_from is None  # type: ignore[attr-defined]
    assert batches[1].not_paid_from == sent_at + timedelta(seconds=900)  # type: ignore[attr-defined]
    assert ids(selectors.panel(study)["unsure_batches"]) == ids([unsent, sent])


def test_a_session_or_a_batch_is_found_only_in_its_own_study(book):
    study, rows = book
    other = Study.objects.get(slug="other-study")
    session = rows["free"].study_session
    connection = MarketConnection.objects.get(study=study)
    BonusBatch.objects.create(connection=connection, lease_until=timezone.now(), state=BatchState.PAID)
    batch = BonusBatch.objects.create(connection=connection, lease_until=timezone.now(), state=BatchState.PAYING)

    assert selectors.session_of(study, session.pk) == session
    assert selectors.session_of(other, session.pk) is None
    assert selectors.batch_of(study, batch.pk) == batch
    assert selectors.batch_of(other, batch.pk) is None


def test_the_study_pages_costs_split_the_tally_by_what_payers_sent(book):
    """The study page's bonuses by cause, from the ledger's tally less what a payer sent and the
    market has not confirmed: owed is payable and unsent (set aside is owed again), approved is
    sent whatever the hold, held waits for a decision, paid is the ledger's."""
    study, _ = book

    # A researcher's preview earns and sends nothing that counts: in no figure.
    preview = visit(study, "preview")
    StudySession.objects.filter(pk=preview.pk).update(is_preview=True)
    paying(earned(study, preview, "20.48"), MarketConnection.objects.get(study=study), PaymentState.SENT)
    paying(earned(study, preview, "40.96"), MarketConnection.objects.get(study=study), PaymentState.RELEASED)

    costs = study_costs.costs(study, 4, 0, {"owed": 4}, connected=True)
    unconnected = study_costs.costs(study, 0, connected=False)

    (catch,) = costs.by_cause
    assert (catch.cause.key, catch.earned) == ("catch_trial", 11)
    assert (str(catch.owed), str(catch.approved), str(catch.paid)) == ("1.31 GBP", "11.48 GBP", "2.56 GBP")
    assert str(costs.bonuses_held) == "15.36 GBP"
    assert (costs.held_tasks, costs.held_task_money.is_zero) == (0, True)
    assert (costs.tasks, costs.task_counts) == (4, {"owed": 4})
    assert costs.task_money == costs.task_amounts["owed"] == Money.of(4 * study.payment_per_task, study.bonus_currency)
    # Told there is no connection, nothing is read as sent: every payable bonus is owed.
    assert (str(unconnected.bonuses_owed), unconnected.bonuses_approved.is_zero) == ("2.55 GBP", True)


def test_a_causes_costs_add_up_every_currency_the_study_paid_in(book):
    """A study whose currency changed keeps a tally row per currency: each cause's figures are the
    sums of them all, in each currency."""
    study, rows = book
    done = rows["free"].study_session
    connection = MarketConnection.objects.get(study=study)
    for amount, state in (("3.00", None), ("4.00", PaymentState.SENT)):
        entry = earned(study, done, amount, currency="USD")
        if state:
            paying(entry, connection, state)
    paid(earned(study, done, "0.50"))

    (catch,) = study_costs.costs(study, 0, connected=True).by_cause

    assert catch.earned == 14
    assert catch.owed == Money.of(Decimal("1.31"), "GBP") + Money.of(Decimal("3.00"), "USD")
    assert catch.approved == Money.of(Decimal("11.48"), "GBP") + Money.of(Decimal("4.00"), "USD")
    assert catch.paid == Money.of(Decimal("3.06"), "GBP") + Money.of(0, "USD")
