"""The steps of the money path (markets/payments.py) that mutmut found unguarded: the outcome a
press sums and says, a ledger's paid total per participant, who waits on Prolific while a bonus of
theirs is in flight, the last step that writes the ledger's paid rows (as whose, as confirmed by the
market) and ends the payment rows, what a failed pay call frees or leaves unknown, the bonuses each
payer gives back as not its market's, whose calls an MTurk press logs, what an MTurk send commits
before the call, and how MTurk's listing settles a send whose answer was lost (against the market
STAND-IN, tests/markets/standin.py)."""

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import connection as db_connection
from django.db import transaction
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Market, Worker
from crowd.models import StudySession
from markets import hand_payments, payments
from markets.clients import MarketError, MarketTimeout
from markets.connections import connected
from markets.models import BatchState, BonusBatch, BonusPayment, MarketCall, MarketConnection, Payer, PaymentState
from quality import bonuses
from quality.models import BonusEntry

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db

LEASE = timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS)
MTURK_STRANGER = "Not an MTurk worker with an assignment: pay this bonus by hand."
PROLIFIC_STRANGER = "Not a Prolific participant: pay this bonus by hand."


def _held(connection: MarketConnection, entry: BonusEntry, state: str = PaymentState.SENT) -> BonusPayment:
    """The API payer's row for one bonus, in `state`, under a live lease."""
    return BonusPayment.objects.create(
        earned=entry,
        connection=connection,
        payer=Payer.API,
        state=state,
        request_token=f"nli-bonus-{entry.pk}",
        lease_until=timezone.now() + timedelta(minutes=5),
    )


def _stranger(
    django_user_model: Any, study: Any, market: str, external_id: str, assignment: str, name: str
) -> StudySession:
    """A completed session of the study by a worker the study's market may not know."""
    user = django_user_model.objects.create_user(username=name)
    worker = Worker.objects.create(user=user, market=market, external_id=external_id)
    session = StudySession.objects.create(
        study=study, worker=worker, external_study_id="elsewhere", external_session_id=assignment
    )
    session.completed_at = session.started_at
    session.completion_code = session.expected_completion_code()
    session.save()
    return session


def test_adding_outcomes_sums_every_count_and_keeps_every_error_in_order():
    total = payments.PaymentOutcome(
        paid=1, amount=Decimal("0.50"), waiting=2, refused=3, set_aside=4, errors=["the first refusal"]
    )

    total.add(
        payments.PaymentOutcome(paid=2, amount=Decimal("1.25"), waiting=1, refused=1, set_aside=2, errors=["another"])
    )

    assert total == payments.PaymentOutcome(
        paid=3, amount=Decimal("1.75"), waiting=3, refused=4, set_aside=6, errors=["the first refusal", "another"]
    )


def test_the_line_a_press_shows_says_each_count_after_what_was_paid():
    start = "Paid on the market: 0 bonus(es), 0.00 GBP."

    assert payments.PaymentOutcome(waiting=2).line("GBP") == (
        f"{start} 2 sent without the market's confirmation yet: they are confirmed from the market's record "
        "(reconcile), never sent again blindly."
    )
    assert payments.PaymentOutcome(refused=2, errors=["the first refusal", "another"]).line("GBP") == (
        f"{start} 2 refused: the first refusal."
    )
    assert payments.PaymentOutcome(refused=1).line("GBP") == f"{start} 1 refused: see the calls."
    assert payments.PaymentOutcome(set_aside=1).line("GBP") == (
        f"{start} 1 set aside: the market refused their participant (the bonus page says why); the others were paid."
    )


def test_an_amount_is_counted_in_whole_cents():
    assert payments._cents(Decimal("1.25")) == 125
    assert payments._cents(Decimal("0.5")) == 50


def test_a_lease_runs_the_configured_seconds_from_now():
    before = timezone.now()
    lease = payments._lease()
    after = timezone.now()

    assert before + LEASE <= lease <= after + LEASE


def test_the_ledger_paid_total_sums_only_the_studys_paid_rows_of_the_workers_asked_for(standin, django_user_model):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 3)
    first, second, third = (s.worker for s in sessions)
    owed = owe_bonuses(study, sessions, per_session=2, amount="0.25")
    # The first participant's two bonuses paid, one of the second's (its other only earned), the third's both.
    bonuses.mark_paid(study, [owed[0].pk, owed[1].pk, owed[2].pk, owed[4].pk, owed[5].pk], confirmed_by_market=True)
    other = make_study(slug="other-study")
    elsewhere = StudySession.objects.create(
        study=other, worker=first, external_study_id="elsewhere", external_session_id="elsewhere-1"
    )
    bonuses.mark_paid(other, [e.pk for e in owe_bonuses(other, [elsewhere], per_session=1)], confirmed_by_market=True)

    totals = payments._ledger_paid_cents(study, iter([first.pk, second.pk]))

    assert dict(totals) == {first.pk: 50, second.pk: 25}
    assert third.pk not in totals


def test_a_prolific_participant_is_a_prolific_worker_with_an_id():
    def participant(market: str, external_id: str) -> str | None:
        worker = Worker(market=market, external_id=external_id)
        return payments._prolific_participant(BonusPayment(earned=BonusEntry(worker=worker)))

    assert participant(Market.PROLIFIC, "5f-participant") == "5f-participant"
    assert participant(Market.MTURK, "A1MTURKWORKER") is None
    assert participant(Market.PROLIFIC, "") is None


def test_on_prolific_only_this_connections_participants_with_a_bonus_in_flight_wait(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 5)
    owed = owe_bonuses(study, sessions, per_session=1)
    states = [PaymentState.CLAIMED, PaymentState.SENT, PaymentState.UNKNOWN, PaymentState.RELEASED, PaymentState.ASIDE]
    for entry, state in zip(owed, states, strict=True):
        _held(connection, entry, state)
    other = make_study(slug="other-study")
    other_connection = connect_prolific(other, standin)
    (elsewhere,) = arrive(other, standin, django_user_model, 1, prefix="other-")
    _held(other_connection, owe_bonuses(other, [elsewhere], per_session=1)[0])
    on_mturk = make_study(slug="mturk-study")
    mturk_connection = connect_mturk(on_mturk, standin)
    (mturk_session,) = arrive(on_mturk, standin, django_user_model, 1, market=Market.MTURK)
    _held(mturk_connection, owe_bonuses(on_mturk, [mturk_session], per_session=1)[0])

    assert payments.waiting_participants(connection) == {s.worker_id for s in sessions[:3]}
    assert payments.waiting_participants(mturk_connection) == set(), "MTurk names each bonus: nobody waits"


def test_confirming_writes_the_paid_rows_as_who_confirmed_and_ends_only_their_payment_rows(
    standin, django_user_model, researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 4)
    owed = owe_bonuses(study, sessions, per_session=1)
    for entry in owed:
        _held(connection, entry, PaymentState.UNKNOWN)

    with transaction.atomic():
        result = payments.confirm_paid(study, [owed[0].pk, owed[1].pk], researcher, confirmed_by_market=True)
        payments.confirm_paid(study, [owed[2].pk], AnonymousUser(), confirmed_by_market=False)

    assert (result["paid"], result["amount"]) == (2, Decimal("1.00"))
    assert sorted(ledger_paid(study).values_list("pays_id", "recorded_by")) == [
        (owed[0].pk, researcher.pk),
        (owed[1].pk, researcher.pk),
        (owed[2].pk, None),
    ], "a visitor without an account is recorded as no one"
    assert list(BonusPayment.objects.values_list("earned_id", flat=True)) == [owed[3].pk]
    assert [e.action for e in AuditEntry.objects.filter(action__startswith="payment.").order_by("pk")] == [
        "payment.confirmed_by_market",
        "payment.marked_paid",
    ]
    with transaction.atomic():
        assert payments.confirm_paid(study, [owed[3].pk], None, confirmed_by_market=True)["paid"] == 1
    assert ledger_paid(study).get(pays=owed[3]).recorded_by is None
    assert not BonusPayment.objects.exists()


def test_confirming_payments_the_market_made_counts_them_once_as_confirmed_by_the_market(
    standin, django_user_model, researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    ids = [_held(connection, entry).pk for entry in owe_bonuses(study, sessions, per_session=1)]

    outcome = payments._confirm_payments(study, ids, researcher)

    assert (outcome.paid, outcome.amount) == (2, Decimal("1.00"))
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk] * 2
    assert [e.action for e in AuditEntry.objects.filter(action__startswith="payment.")] == [
        "payment.confirmed_by_market"
    ]
    assert not BonusPayment.objects.exists()
    assert payments._confirm_payments(study, ids, researcher) == payments.PaymentOutcome(), "confirmed already"


def test_a_paying_bulk_bonus_is_confirmed_paid_once_with_its_bonuses(standin, django_user_model, researcher):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-after")  # Prolific pays, its answer is lost
    assert payments.pay_owed_bonuses(study).waiting == 2
    batch = BonusBatch.objects.get()
    assert batch.state == BatchState.PAYING

    outcome = payments._confirm_batch(connection, batch.pk, researcher)

    assert (outcome.paid, outcome.amount) == (2, Decimal("1.00"))
    batch.refresh_from_db()
    assert batch.state == BatchState.PAID and batch.confirmed_at is not None
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk] * 2
    confirmed_at = batch.confirmed_at
    assert payments._confirm_batch(connection, batch.pk, researcher).paid == 0
    batch.refresh_from_db()
    assert (batch.state, batch.confirmed_at) == (BatchState.PAID, confirmed_at), "confirmed once"


def test_a_failed_pay_frees_its_rows_only_on_a_nothing_done_answer_else_they_wait(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    rows = [_held(connection, entry) for entry in owe_bonuses(study, sessions, per_session=1)]
    outcome = payments.PaymentOutcome(refused=1, waiting=1, errors=["earlier"])
    refused = MarketError("Invalid request: the amount", status=400)  # Prolific's: nothing was done

    assert payments._pay_failed(outcome, connection, [rows[0].pk, rows[1].pk], refused) is True

    assert sorted(BonusPayment.objects.values_list("pk", "state", "last_error")) == [
        (rows[0].pk, PaymentState.RELEASED, str(refused)),
        (rows[1].pk, PaymentState.RELEASED, str(refused)),
        (rows[2].pk, PaymentState.SENT, ""),
    ]
    assert (outcome.refused, outcome.waiting, outcome.errors) == (3, 1, ["earlier", str(refused)])
    lost = MarketTimeout("No answer from Prolific in time.")

    assert payments._pay_failed(outcome, connection, [rows[2].pk], lost) is False

    assert BonusPayment.objects.filter(pk=rows[2].pk, state=PaymentState.UNKNOWN, last_error=str(lost)).exists()
    assert (outcome.refused, outcome.waiting, outcome.errors) == (3, 2, ["earlier", str(refused)])


def test_a_prolific_press_pays_its_participants_in_one_bulk_bonus_and_frees_the_others_saying_why(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_prolific(study, standin)
    strangers = [
        _stranger(django_user_model, study, Market.MTURK, "A1MTURKWORKER", "assignment-1", "from-mturk"),
        _stranger(django_user_model, study, Market.PROLIFIC, "", "submission-x", "prolific-without-id"),
    ]
    sessions = arrive(study, standin, django_user_model, 2)
    owed = owe_bonuses(study, strangers + sessions, per_session=1)

    outcome = payments.pay_owed_bonuses(study, by=researcher)

    assert (outcome.paid, outcome.amount, outcome.refused, outcome.waiting) == (2, Decimal("1.00"), 2, 0)
    assert outcome.errors == ["some bonuses are for workers who did not come from Prolific"]
    assert sorted(BonusPayment.objects.values_list("earned_id", "state", "last_error")) == [
        (owed[0].pk, PaymentState.RELEASED, PROLIFIC_STRANGER),
        (owed[1].pk, PaymentState.RELEASED, PROLIFIC_STRANGER),
    ]
    participants = sorted(s.worker.external_id for s in sessions)
    assert [sorted(b["lines"]) for b in standin.bulk_bonuses.values()] == [participants], "one bulk bonus"
    assert standin.prolific_paid_cents() == dict.fromkeys(participants, 50)
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk] * 2


def test_a_press_first_settles_an_earlier_pay_then_pays_whats_newly_owed_as_the_researchers(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-after")  # Prolific pays, its answer is lost
    assert payments.pay_owed_bonuses(study).waiting == 2
    owe_bonuses(study, sessions[:1], per_session=1)

    outcome = payments.pay_owed_bonuses(study, by=researcher)

    assert (outcome.paid, outcome.amount, outcome.waiting) == (3, Decimal("1.50"), 0)
    assert standin.bulk_pay_calls == ["bulk-1", "bulk-2"], "the first bulk bonus is never paid again"
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk] * 3


def test_an_mturk_press_pays_its_workers_and_frees_each_bonus_without_a_worker_and_assignment(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_mturk(study, standin)
    strangers = [
        _stranger(django_user_model, study, Market.PROLIFIC, "5f-participant", "submission-1", "from-prolific"),
        _stranger(django_user_model, study, Market.MTURK, "", "assignment-without-worker", "mturk-without-id"),
        _stranger(django_user_model, study, Market.MTURK, "A2NOASSIGNMENT", "", "mturk-without-assignment"),
    ]
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    owed = owe_bonuses(study, strangers + sessions, per_session=1)

    outcome = payments.pay_owed_bonuses(study, by=researcher)

    assert (outcome.paid, outcome.amount, outcome.refused, outcome.set_aside) == (2, Decimal("1.00"), 3, 0)
    assert outcome.errors == ["some bonuses are for workers who did not come from MTurk"] * 3
    assert sorted(BonusPayment.objects.values_list("earned_id", "state", "last_error")) == [
        (entry.pk, PaymentState.RELEASED, MTURK_STRANGER) for entry in owed[:3]
    ]
    assert standin.mturk_paid() == {s.worker.external_id: Decimal("0.50") for s in sessions}
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk] * 2
    sends = MarketCall.objects.filter(connection=connected(study))
    assert sends.count() == 2 and set(sends.values_list("made_by", flat=True)) == {researcher.pk}, "who sent them"


@pytest.mark.django_db(transaction=True)
def test_an_mturk_bonus_tried_again_is_committed_sent_with_its_count_and_a_fresh_lease_before_the_call(
    standin, django_user_model
):
    study = make_study()
    connect_mturk(study, standin)
    (session,) = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, [session], per_session=1)
    worker_id = standin.assignments[session.external_session_id]["WorkerId"]
    standin.assignments[session.external_session_id]["WorkerId"] = "someone-else"  # MTurk refuses it
    assert payments.pay_owed_bonuses(study).set_aside == 1
    standin.assignments[session.external_session_id]["WorkerId"] = worker_id  # the researcher fixed it
    assert hand_payments.release_set_aside(study) == 1
    seen_at_send: list[dict[str, Any]] = []

    def read_what_was_committed() -> None:
        # The stand-in's own thread and database connection: it sees only what was committed.
        try:
            seen_at_send.append(dict(BonusPayment.objects.values().get()))
        finally:
            db_connection.close()

    standin.before_answer["SendBonus"] = read_what_was_committed
    pressed = timezone.now()

    assert payments.pay_owed_bonuses(study).paid == 1

    (row,) = seen_at_send
    assert (row["state"], row["attempts"]) == (PaymentState.SENT, 2), "its second send"
    assert row["sent_at"] >= pressed
    assert row["lease_until"] >= row["sent_at"] + LEASE, "a lease from the send, not the claim's"


def test_an_mturk_send_whose_answer_was_lost_is_sent_again_under_its_token_and_waits_for_the_listing(
    standin, django_user_model
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("SendBonus", "slow-after")  # MTurk pays, its answer is lost, its listing lags
    assert payments.pay_owed_bonuses(study).waiting == 1
    reconciled = timezone.now()

    outcome = payments.reconcile_payments(connection, now_please=True)

    assert (outcome.paid, outcome.waiting) == (0, 1)
    row = BonusPayment.objects.get()
    assert (row.state, row.attempts) == (PaymentState.UNKNOWN, 2)
    assert row.sent_at is not None and row.sent_at >= reconciled, "sent again under the same token"
    assert row.record_read_at is not None and row.record_read_at >= row.sent_at, "the listing read after it"
    assert row.lease_until >= row.sent_at + LEASE
    assert len(standin.bonuses_sent) == 1, "MTurk pays one bonus per token"
    standin.publish()
    assert payments.reconcile_payments(connection, now_please=True).paid == 1
    assert len(standin.bonuses_sent) == 1 and not BonusPayment.objects.exists()


def test_an_mturk_listing_showing_only_another_bonus_of_the_assignment_sends_this_one_again(
    standin, django_user_model, researcher
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=2)
    standin.fail("SendBonus", "slow-before")  # the first send: MTurk did nothing, its answer came late
    first = payments.pay_owed_bonuses(study)
    assert (first.paid, first.waiting) == (1, 1)

    outcome = payments.reconcile_payments(connection, by=researcher, now_please=True)

    assert (outcome.paid, outcome.amount, outcome.waiting) == (1, Decimal("0.50"), 0)
    assert len(standin.bonuses_sent) == 2
    assert standin.mturk_paid() == {sessions[0].worker.external_id: Decimal("1.00")}
    assert sorted(ledger_paid(study).values_list("recorded_by", flat=True), key=str) == sorted(
        [None, researcher.pk], key=str
    )
    assert not BonusPayment.objects.exists()


def test_an_mturk_listing_showing_the_bonus_confirms_it_as_the_researchers_without_sending_again(
    standin, django_user_model, researcher
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("SendBonus", "slow-after")  # MTurk pays, its answer is lost
    assert payments.pay_owed_bonuses(study).waiting == 1

    outcome = payments.reconcile_payments(connection, by=researcher, now_please=True)

    assert (outcome.paid, outcome.amount, outcome.waiting) == (1, Decimal("0.50"), 0)
    assert len(standin.bonuses_sent) == 1
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk]
    assert not BonusPayment.objects.exists()


def test_an_mturk_listing_that_cannot_be_read_keeps_the_bonus_waiting_with_the_listings_error(
    standin, django_user_model
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("SendBonus", "slow-after")  # MTurk pays, its answer is lost
    assert payments.pay_owed_bonuses(study).waiting == 1
    standin.fail("ListBonusPayments", "500")

    outcome = payments.reconcile_payments(connection, now_please=True)

    assert (outcome.paid, outcome.waiting) == (0, 1)
    row = BonusPayment.objects.get()
    assert row.state == PaymentState.UNKNOWN and "Internal error" in row.last_error, "MTurk's words"
    assert len(standin.bonuses_sent) == 1
