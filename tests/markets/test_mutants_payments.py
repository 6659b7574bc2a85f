"""The money path's edges that mutmut found unguarded (markets/payments.py): what a researcher's
release frees (only this study's rows in that state, never a bonus in flight), what a payment file
lists and claims, "mark paid" by hand (without a connection, on a set-aside bonus, refused beside
the API payer), the line a press shows, and what a refused "not paid" and the audit entry of an
accepted one say; and the payers: MTurk's answer to a token sent again, who pressed (on the ledger
and the call log), a bulk bonus given up or split, and a "not paid" Prolific's record contradicts
or cannot back; and the reconcile: which stalled bulk bonuses it gives up, what it counts waiting,
whose record it reads and sends again, and whose calls it logs (against the market STAND-IN,
tests/markets/standin.py)."""

from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Market, Worker
from markets import hand_payments, payments
from markets.answers import settled_after
from markets.connections import ConnectionRefused
from markets.models import BatchState, BonusBatch, BonusPayment, MarketCall, Payer, PaymentState
from quality.bonuses import PaymentRefused

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


def test_releasing_set_aside_bonuses_frees_only_this_studys_and_never_one_in_flight(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    standin.assignments[sessions[1].external_session_id]["WorkerId"] = "someone-else"  # MTurk refuses it
    owed = owe_bonuses(study, sessions, per_session=1)
    standin.fail("SendBonus", "slow-after")  # the first bonus: MTurk pays, its answer is lost
    outcome = payments.pay_owed_bonuses(study)
    assert (outcome.waiting, outcome.set_aside) == (1, 1)
    other = make_study(slug="other-study")
    connect_prolific(other, standin)
    (stranger,) = arrive(other, standin, django_user_model, 1)
    standin.submissions.pop(stranger.external_session_id)  # Prolific refuses this participant
    owe_bonuses(other, [stranger], per_session=1)
    assert payments.pay_owed_bonuses(other).set_aside == 1

    assert hand_payments.release_set_aside(study) == 1

    released = BonusPayment.objects.get(earned=owed[1])
    assert released.state == PaymentState.RELEASED
    assert released.last_error == "Released by a researcher to be tried again.", "the market's refusal is not kept"
    assert BonusPayment.objects.get(earned=owed[0]).state == PaymentState.UNKNOWN, "MTurk may have paid it"
    assert BonusPayment.objects.get(earned__study=other).state == PaymentState.ASIDE, "another study's"


def test_releasing_a_downloaded_file_frees_only_its_claims_once(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owed = owe_bonuses(study, sessions, per_session=1)
    # The API payer's bulk bonus for the first participant, sent when its payer died: in flight.
    in_flight = BonusPayment.objects.create(
        earned=owed[0],
        connection=connection,
        payer=Payer.API,
        state=PaymentState.SENT,
        request_token=f"nli-bonus-{owed[0].pk}",
        sent_at=timezone.now(),
        lease_until=timezone.now() + timedelta(minutes=5),
    )
    assert {e.pk for e in hand_payments.claim_for_file(study, "prolific")} == {owed[1].pk, owed[2].pk}
    other = make_study(slug="other-study")
    connect_mturk(other, standin)
    foreign = arrive(other, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(other, foreign, per_session=1)
    assert len(hand_payments.claim_for_file(other, "mturk")) == 1

    assert hand_payments.release_file_claims(study) == 2

    for row in BonusPayment.objects.filter(earned__in=owed[1:]):
        assert (row.state, row.last_error) == (PaymentState.RELEASED, hand_payments.HAND_RELEASED)
    in_flight.refresh_from_db()
    assert (in_flight.payer, in_flight.state) == (Payer.API, PaymentState.SENT), "the API payer's send is not freed"
    assert BonusPayment.objects.get(earned__study=other).state == PaymentState.SENT, "another study's file"
    assert hand_payments.release_file_claims(study) == 0, "a file released already frees nothing more"


def test_marking_paid_by_hand_without_a_connection_records_who_paid(standin, django_user_model, researcher):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    owed = owe_bonuses(study, sessions, per_session=1)

    result = hand_payments.mark_paid_by_hand(study, [str(row.pk) for row in owed], by=researcher)

    assert (result["paid"], result["already_paid"]) == (2, 0)
    assert sorted(ledger_paid(study).values_list("pays_id", "recorded_by")) == sorted(
        (row.pk, researcher.pk) for row in owed
    )
    (entry,) = AuditEntry.objects.filter(action="payment.marked_paid")
    assert entry.actor == researcher.username and entry.after["bonuses"] == sorted(row.pk for row in owed)


def _paying_batch(study, standin, django_user_model, fault):
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", fault)
    payments.pay_owed_bonuses(study)
    return BonusBatch.objects.get()


def test_a_not_paid_pressed_too_early_says_when_to_press_again(standin, django_user_model):
    study = make_study()
    standin.record_lags = True
    batch = _paying_batch(study, standin, django_user_model, "slow-after")

    with pytest.raises(payments.NotPaidRefused) as refused:
        payments.resolve_unpaid_batch(batch)

    when = f"{settled_after(batch.pay_sent_at):%Y-%m-%d %H:%M:%S} UTC"
    assert f"read after {when}; press again then" in str(refused.value)
    assert "Prolific pays first and lists the payment in its record afterwards, so its record" in str(refused.value)


def test_an_accepted_not_paid_frees_its_bonuses_and_its_audit_entry_says_who_what_and_when(
    standin, django_user_model, researcher, monkeypatch
):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-before")
    later = timezone.now() + timedelta(seconds=settings.MARKET_RECORD_SETTLE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)

    assert payments.resolve_unpaid_batch(batch, by=researcher) == 2

    batch.refresh_from_db()
    assert batch.state == BatchState.ABANDONED
    (entry,) = AuditEntry.objects.filter(action="payment.market_not_paid")
    assert (entry.actor_id, entry.team_id, entry.subject_id) == (researcher.pk, study.team_id, str(batch.pk))
    assert entry.before == {"state": BatchState.PAYING.value}
    assert entry.after == {
        "state": BatchState.ABANDONED.value,
        "released_bonuses": 2,
        "amounts_cents": batch.amounts_cents,
        "pay_sent_at": batch.pay_sent_at.isoformat(),
        "record_read_at": later.isoformat(),
    }
    assert entry.reason == "Prolific's record, read after the pay, shows it was not paid."
    assert set(BonusPayment.objects.values_list("state", "last_error")) == {
        (PaymentState.RELEASED, "A researcher found on Prolific that this bulk bonus was not paid.")
    }, "why the bonuses are owed again"


def test_a_left_out_bonus_is_listed_and_never_claimed_and_the_files_other_bonuses_still_are(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owed = owe_bonuses(study, sessions, per_session=1)
    Worker.objects.filter(pk=sessions[0].worker_id).update(external_id="")  # no participant id: by hand

    assert [e.pk for e in hand_payments.claim_for_file(study, "left-out")] == [owed[0].pk]
    assert not BonusPayment.objects.exists(), "the left-out list claims nothing"
    assert {e.pk for e in hand_payments.claim_for_file(study, "prolific")} == {owed[1].pk, owed[2].pk}
    with pytest.raises(ValueError, match=r"^Payment files: prolific, mturk, left-out\.$"):
        hand_payments.claim_for_file(study, "paypal")


def test_a_study_without_a_connection_lists_its_files_bonuses_and_claims_nothing(standin, django_user_model):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    owed = owe_bonuses(study, sessions, per_session=1)

    assert [e.pk for e in hand_payments.claim_for_file(study, "prolific")] == [row.pk for row in owed]
    assert hand_payments.claim_for_file(study, "mturk") == []
    assert not BonusPayment.objects.exists()


def test_a_file_claims_a_bonus_an_api_payer_freed_as_its_own_clean_send(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 1)
    (row,) = owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.create", "slow-after")  # created on Prolific, its answer lost: freed, paid nothing
    payments.pay_owed_bonuses(study)
    freed = BonusPayment.objects.get(earned=row)
    assert (freed.state, freed.payer) == (PaymentState.RELEASED, Payer.API)
    assert freed.batch_id is not None and freed.last_error

    assert [e.pk for e in hand_payments.claim_for_file(study, "prolific")] == [row.pk]

    claim = BonusPayment.objects.get(earned=row)
    assert (claim.state, claim.payer, claim.batch_id, claim.last_error) == (PaymentState.SENT, Payer.FILE, None, "")
    assert claim.sent_at is not None


def test_a_set_aside_bonus_paid_by_hand_is_marked_paid_by_the_researcher(standin, django_user_model, researcher):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    standin.submissions.pop(sessions[1].external_session_id)  # Prolific refuses this participant
    owed = owe_bonuses(study, sessions, per_session=1)
    assert payments.pay_owed_bonuses(study).set_aside == 1

    result = hand_payments.mark_paid_by_hand(study, [owed[1].pk], by=researcher)

    assert result["paid"] == 1
    (entry,) = AuditEntry.objects.filter(actor=researcher.username)
    assert entry.action == "payment.marked_paid", "a researcher's word, not the market's confirmation"


def test_mark_paid_by_hand_beside_the_api_payer_is_refused_and_says_to_reload(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owed = owe_bonuses(study, sessions, per_session=1)
    BonusPayment.objects.create(
        earned=owed[0],
        connection=connection,
        payer=Payer.API,
        state=PaymentState.UNKNOWN,
        request_token=f"nli-bonus-{owed[0].pk}",
        lease_until=timezone.now(),
    )

    with pytest.raises(PaymentRefused) as refused:
        hand_payments.mark_paid_by_hand(study, [row.pk for row in owed])

    assert str(refused.value) == (
        "1 of these bonus(es) are being paid through the market's API: nothing was marked paid. "
        "Reload the page: it lists only the bonuses no other payer holds."
    )
    assert not ledger_paid(study).exists()


def test_an_mturk_listing_that_cannot_be_read_is_the_waiting_bonus_last_error(standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    (row,) = owe_bonuses(study, sessions, per_session=1)
    standin.fail("SendBonus", "slow-after")
    assert payments.pay_owed_bonuses(study).waiting == 1
    timed_out = BonusPayment.objects.get(earned=row).last_error
    standin.fail("ListBonusPayments", "500")

    assert payments.reconcile_payments(connection, now_please=True).waiting == 1

    waiting = BonusPayment.objects.get(earned=row)
    assert waiting.state == PaymentState.UNKNOWN
    assert waiting.last_error and waiting.last_error != timed_out, "why it still waits: the listing's error"


def test_the_line_a_press_shows_names_every_count_and_the_first_refusal():
    outcome = payments.PaymentOutcome(
        paid=2, amount=Decimal("1.5"), waiting=1, refused=3, set_aside=4, errors=["Refused: no funds", "later"]
    )

    assert outcome.line("GBP") == (
        "Paid on the market: 2 bonus(es), 1.50 GBP. 1 sent without the market's confirmation yet: they are "
        "confirmed from the market's record (reconcile), never sent again blindly. 3 refused: Refused: no funds. "
        "4 set aside: the market refused their participant (the bonus page says why); the others were paid."
    )
    assert payments.PaymentOutcome(refused=1).line("USD") == (
        "Paid on the market: 0 bonus(es), 0.00 USD. 1 refused: see the calls."
    )
    assert payments.PaymentOutcome(paid=1, amount=Decimal("0.5")).line("USD") == (
        "Paid on the market: 1 bonus(es), 0.50 USD."
    )


@pytest.mark.parametrize(
    "words",
    ["The UniqueRequestToken {token} was used before.", "This bonus was already sent."],
    ids=["names-the-token", "says-already"],
)
def test_a_bonus_sent_again_under_a_used_token_is_settled_from_mturks_listing(
    standin, django_user_model, researcher, words
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("SendBonus", "slow-after")  # MTurk pays, its answer is lost, its listing lags
    assert payments.pay_owed_bonuses(study).waiting == 1
    # MTurk's answer to the token sent again may name the token or only say "already": either way
    # the bonus went through once, and its listing (caught up by the time of the answer) decides.
    refuse = standin._request_error
    standin._request_error = lambda message: refuse(
        words.format(token=message.split()[2]) if "UniqueRequestToken" in message else message
    )
    standin.before_answer["SendBonus"] = standin.publish

    outcome = payments.reconcile_payments(connection, by=researcher, now_please=True)

    assert (outcome.paid, outcome.set_aside) == (1, 0)
    assert len(standin.bonuses_sent) == 1
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk]


def test_an_mturk_press_records_who_paid_and_says_why_mturk_refused_a_bonus(standin, django_user_model, researcher):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    standin.assignments[sessions[1].external_session_id]["WorkerId"] = "someone-else"  # MTurk refuses it
    owe_bonuses(study, sessions, per_session=1)

    outcome = payments.pay_owed_bonuses(study, by=researcher)

    assert (outcome.paid, outcome.set_aside) == (1, 1)
    assert len(outcome.errors) == 1 and "Assignment and worker do not match." in outcome.errors[0]
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk]


def test_a_not_paid_on_a_bulk_bonus_prolific_shows_paid_confirms_it_as_the_researchers(
    standin, django_user_model, researcher
):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-after")  # paid, its answer lost

    assert payments.resolve_unpaid_batch(batch, by=researcher) == 0

    batch.refresh_from_db()
    assert batch.state == BatchState.PAID
    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk] * 2


def test_a_not_paid_while_prolific_cannot_be_asked_frees_nothing_and_says_so(standin, django_user_model):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-before")
    standin.fail("submissions.list", "400", times=3)

    with pytest.raises(ConnectionRefused) as refused:
        payments.resolve_unpaid_batch(batch)

    assert str(refused.value).startswith("Prolific could not be asked whether it paid this bulk bonus (")
    assert str(refused.value).endswith("): nothing was freed.")
    batch.refresh_from_db()
    assert batch.state == BatchState.PAYING


def test_a_prolific_press_gives_up_a_bulk_bonus_whose_creation_failed_and_logs_its_calls_as_the_researchers(
    standin, django_user_model, researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 1)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.create", "slow-after")  # created on Prolific, its answer lost: never paid

    assert payments.pay_owed_bonuses(study, by=researcher).paid == 0
    assert BonusBatch.objects.get().state == BatchState.ABANDONED, "no reconcile may take it for a stalled one"
    assert payments.pay_owed_bonuses(study, by=researcher).paid == 1

    calls = MarketCall.objects.filter(connection=connection)
    assert calls.count() >= 3 and set(calls.values_list("made_by", flat=True)) == {researcher.pk}


def test_a_payer_killed_while_splitting_a_refused_bulk_bonus_leaves_its_bonuses_to_the_lease_then_pays_them(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.submissions.pop(sessions[1].external_session_id)  # Prolific refuses one id: the bulk bonus is split
    split = payments._pay_one_bulk
    leases: list[datetime] = []

    def killed_when_splitting(connection, part, by):
        leases.extend(BonusPayment.objects.values_list("lease_until", flat=True))
        if len(leases) > 2:
            raise SystemExit("the payer's process was killed")  # before the first half is created again
        return split(connection, part, by)

    monkeypatch.setattr(payments, "_pay_one_bulk", killed_when_splitting)
    with pytest.raises(SystemExit):
        payments.pay_owed_bonuses(study)
    monkeypatch.undo()

    rows = list(BonusPayment.objects.all())
    assert {(row.state, row.batch_id) for row in rows} == {(PaymentState.CLAIMED, None)}, (
        "unbound from the given-up batch"
    )
    assert all(row.lease_until > max(leases[:2]) for row in rows), "a fresh lease"
    assert payments.pay_owed_bonuses(study).paid == 0, "held to the lease's end"
    later = timezone.now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)
    outcome = payments.pay_owed_bonuses(study)
    assert (outcome.paid, outcome.set_aside) == (1, 1)


def test_a_split_bulk_bonus_says_why_prolific_refused_and_logs_its_calls_as_the_researchers(
    standin, django_user_model, researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.submissions.pop(sessions[1].external_session_id)  # Prolific refuses one id: the bulk bonus is split

    outcome = payments.pay_owed_bonuses(study, by=researcher)

    assert (outcome.paid, outcome.set_aside) == (1, 1)
    assert len(outcome.errors) == 1 and "Incorrect id in csv_bonuses" in outcome.errors[0], "Prolific's reason"
    calls = MarketCall.objects.filter(connection=connection)
    assert calls.count() >= 4 and set(calls.values_list("made_by", flat=True)) == {researcher.pk}


def test_a_payer_that_stopped_before_sending_leaves_its_claims_to_the_lease_then_frees_them_saying_why(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    first = payments._claim_owed(connection)  # its payer stops here, before creating the bulk bonus
    assert len(first) == 2 and payments._claim_owed(connection) == [], "held while the lease runs"

    later = timezone.now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)
    again = payments._claim_owed(connection)

    assert sorted(row.pk for row in again) == sorted(row.pk for row in first), "the same rows, taken again"
    for row in BonusPayment.objects.all():
        assert (row.state, row.payer, row.batch_id) == (PaymentState.CLAIMED, Payer.API, None)
        assert row.last_error == "Its payer stopped before sending; nothing was sent."
        assert row.lease_until > later, "a fresh lease for the new payer"


def test_a_claim_bound_to_a_bulk_bonus_is_left_to_the_reconcile_after_its_lease(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    payments._claim_owed(connection)
    # Its payer bound the rows to a bulk bonus and is still creating it (or died doing so): the
    # reconcile gives the bulk bonus up first, so a claim never frees rows a payer may yet pay.
    batch = BonusBatch.objects.create(
        connection=connection, csv_bonuses="", amounts_cents={}, lease_until=timezone.now()
    )
    BonusPayment.objects.update(batch=batch)

    later = timezone.now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)

    assert payments._claim_owed(connection) == []
    assert set(BonusPayment.objects.values_list("state", "batch_id")) == {(PaymentState.CLAIMED, batch.pk)}


def test_a_claim_frees_only_its_own_studys_rows_whose_payer_stopped(standin, django_user_model, monkeypatch):
    study = make_study()
    connection = connect_prolific(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 1), per_session=1)
    other = make_study(slug="other-study")
    other_connection = connect_prolific(other, standin)
    owe_bonuses(other, arrive(other, standin, django_user_model, 1, prefix="other-"), per_session=1)
    payments._claim_owed(other_connection)  # the other study's payer stops before sending

    later = timezone.now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)
    assert len(payments._claim_owed(connection)) == 1

    stopped = BonusPayment.objects.get(earned__study=other)
    assert (stopped.state, stopped.last_error) == (PaymentState.CLAIMED, ""), "its own study's payer frees it"


def test_a_sent_bonus_whose_answer_was_lost_is_never_taken_again_by_a_claim_after_its_lease(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_mturk(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 1, market=Market.MTURK), per_session=1)
    standin.fail("SendBonus", "slow-after")  # MTurk pays, its answer is lost
    assert payments.pay_owed_bonuses(study).waiting == 1

    later = timezone.now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)

    assert payments._claim_owed(connection) == [], "only the reconcile settles a send"
    assert BonusPayment.objects.get().state == PaymentState.UNKNOWN


# --- the reconcile: what it settles, of whose, and what it leaves ------------------------------


def _past_the_lease(monkeypatch):
    later = timezone.now() + timedelta(seconds=settings.MARKET_PAYMENT_LEASE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)
    return later


def test_a_reconcile_gives_up_only_its_own_studys_bulk_bonuses_stalled_past_their_lease_saying_why(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_prolific(study, standin)
    owed = owe_bonuses(study, arrive(study, standin, django_user_model, 2), per_session=1)
    other = make_study(slug="other-study")
    other_connection = connect_prolific(other, standin)
    owe_bonuses(other, arrive(other, standin, django_user_model, 1, prefix="other-"), per_session=1)
    now = timezone.now()
    stalled, creating = (
        BonusBatch.objects.create(connection=connection, csv_bonuses="", amounts_cents={}, lease_until=now + lease)
        for lease in (timedelta(seconds=1), timedelta(hours=1))
    )
    foreign = BonusBatch.objects.create(
        connection=other_connection, csv_bonuses="", amounts_cents={}, lease_until=now + timedelta(seconds=1)
    )
    for row, batch in ((owed[0], stalled), (owed[1], creating)):
        BonusPayment.objects.create(
            earned=row,
            connection=connection,
            payer=Payer.API,
            batch=batch,
            request_token=f"nli-bonus-{row.pk}",
            lease_until=now + timedelta(hours=1),
        )
    monkeypatch.setattr(payments, "_now", lambda: now + timedelta(minutes=1))

    payments.reconcile_payments(connection)

    states = dict(BonusBatch.objects.values_list("pk", "state"))
    assert states[stalled.pk] == BatchState.ABANDONED
    assert states[creating.pk] == BatchState.NEW, "its payer is still creating it: the lease runs"
    assert states[foreign.pk] == BatchState.NEW, "another study's stalled bulk bonus is its own reconcile's"
    freed = BonusPayment.objects.get(earned=owed[0])
    assert (freed.state, freed.last_error) == (
        PaymentState.RELEASED,
        "Its payer stopped before paying; the bulk bonus was never paid.",
    )
    assert BonusPayment.objects.get(earned=owed[1]).state == PaymentState.CLAIMED


def test_a_reconcile_that_cannot_read_prolifics_record_counts_every_unsure_bonus_waiting_and_says_why(
    standin, django_user_model
):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-before")
    standin.fail("submissions.list", "400", times=3)

    outcome = payments.reconcile_payments(batch.connection)

    assert (outcome.paid, outcome.waiting) == (0, 2)
    assert len(outcome.errors) == 1 and "400" in outcome.errors[0], outcome.errors


def test_a_reconcile_counts_the_bonuses_of_every_bulk_bonus_prolific_does_not_show_yet(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    first, second = arrive(study, standin, django_user_model, 2)
    for session in (first, second):
        owe_bonuses(study, [session], per_session=1)
        standin.fail("bonus.pay", "slow-before")  # nothing paid, no answer in time
        payments.pay_owed_bonuses(study)
    assert BonusBatch.objects.filter(state=BatchState.PAYING).count() == 2

    outcome = payments.reconcile_payments(connection)

    assert (outcome.paid, outcome.waiting) == (0, 2)


def test_a_participants_bonuses_are_summed_over_all_their_submissions_on_prolific(standin, django_user_model):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-after")  # paid, its answer lost
    for pid in batch.amounts_cents:  # each participant also returned an earlier place: no bonus there
        standin.submissions[f"returned-{pid}"] = {"participant_id": pid, "status": "RETURNED", "bonus_payments": []}

    outcome = payments.reconcile_payments(batch.connection)

    assert outcome.paid == 2
    assert BonusBatch.objects.get().state == BatchState.PAID


def test_a_bulk_bonus_of_a_participant_prolific_no_longer_lists_waits_for_the_record(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 1)
    owe_bonuses(study, sessions, per_session=1, amount="0.01")
    standin.fail("bonus.pay", "slow-before")
    assert payments.pay_owed_bonuses(study).waiting == 1
    standin.submissions.clear()  # the record shows no submission of theirs: nothing of a cent is shown paid

    outcome = payments.reconcile_payments(BonusBatch.objects.get().connection)

    assert (outcome.paid, outcome.waiting) == (0, 1)
    assert BonusBatch.objects.get().state == BatchState.PAYING


def test_a_reconcile_reads_and_confirms_only_its_own_studys_bulk_bonuses(standin, django_user_model):
    other = make_study(slug="other-study")
    connect_prolific(other, standin)
    owe_bonuses(other, arrive(other, standin, django_user_model, 1, prefix="other-"), per_session=1)
    standin.fail("bonus.pay", "slow-after")  # paid on Prolific, its answer lost
    assert payments.pay_owed_bonuses(other).waiting == 1
    study = make_study()
    connection = connect_prolific(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 1), per_session=1)
    standin.fail("bonus.pay", "slow-before")
    payments.pay_owed_bonuses(study)
    batch = BonusBatch.objects.get(connection=connection)

    payments.reconcile_payments(connection)

    foreign = BonusBatch.objects.get(connection__study=other)
    assert (foreign.state, foreign.record_read_at) == (BatchState.PAYING, None), "the other study's reconcile reads it"
    assert BonusBatch.objects.get(pk=batch.pk).record_read_at is not None


def test_a_read_of_prolifics_record_never_moves_a_later_reads_time_back(standin, django_user_model):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-before")
    later_read = timezone.now() + timedelta(hours=1)  # another reconcile's read, asked for after this one's
    BonusBatch.objects.filter(pk=batch.pk).update(record_read_at=later_read)

    payments.reconcile_payments(batch.connection)

    assert BonusBatch.objects.get(pk=batch.pk).record_read_at == later_read


def test_a_reconcile_logs_its_calls_to_either_market_as_the_researchers(standin, django_user_model, researcher):
    study = make_study()
    batch = _paying_batch(study, standin, django_user_model, "slow-before")
    mturk_study = make_study(slug="mturk-study")
    mturk = connect_mturk(mturk_study, standin)
    owe_bonuses(mturk_study, arrive(mturk_study, standin, django_user_model, 1, market=Market.MTURK), per_session=1)
    standin.fail("SendBonus", "slow-after")
    assert payments.pay_owed_bonuses(mturk_study).waiting == 1
    MarketCall.objects.all().delete()

    payments.reconcile_payments(batch.connection, by=researcher)
    payments.reconcile_payments(mturk, by=researcher, now_please=True)

    for connection in (batch.connection, mturk):
        calls = MarketCall.objects.filter(connection=connection)
        assert calls.exists() and set(calls.values_list("made_by", flat=True)) == {researcher.pk}
    assert list(ledger_paid(mturk_study).values_list("recorded_by", flat=True)) == [researcher.pk]


def test_a_reconcile_not_pressed_leaves_an_mturk_bonus_to_its_payer_until_the_lease_ends(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_mturk(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 1, market=Market.MTURK), per_session=1)
    standin.fail("SendBonus", "slow-before")  # nothing reached MTurk; its payer may still send it
    assert payments.pay_owed_bonuses(study).waiting == 1

    assert payments.reconcile_payments(connection).paid == 0
    assert standin.bonuses_sent == [] and BonusPayment.objects.get().attempts == 1

    _past_the_lease(monkeypatch)
    assert payments.reconcile_payments(connection).paid == 1
    assert len(standin.bonuses_sent) == 1


def test_an_mturk_reconcile_sends_again_only_its_own_studys_sends_without_an_answer(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    standin.assignments[sessions[1].external_session_id]["WorkerId"] = "someone-else"  # MTurk refuses it
    owe_bonuses(study, sessions, per_session=1)
    assert payments.pay_owed_bonuses(study).set_aside == 1
    other = make_study(slug="other-study")
    connect_mturk(other, standin)
    owe_bonuses(other, arrive(other, standin, django_user_model, 1, market=Market.MTURK, prefix="o-"), per_session=1)
    standin.fail("SendBonus", "slow-before")
    assert payments.pay_owed_bonuses(other).waiting == 1
    sent = len(standin.bonuses_sent)
    _past_the_lease(monkeypatch)

    outcome = payments.reconcile_payments(connection, now_please=True)

    assert (outcome.paid, outcome.set_aside) == (0, 0), "the set-aside bonus is not sent again"
    assert len(standin.bonuses_sent) == sent
    assert BonusPayment.objects.get(earned__study=other).attempts == 1, "the other study's reconcile sends it"


def test_an_mturk_reconcile_skips_a_bonus_another_reconcile_took_and_settles_the_rest(
    standin, django_user_model, monkeypatch
):
    study = make_study()
    connection = connect_mturk(study, standin)
    owed = owe_bonuses(study, arrive(study, standin, django_user_model, 3, market=Market.MTURK), per_session=1)
    standin.fail("SendBonus", "slow-after", times=3)  # MTurk pays all three, their answers lost
    assert payments.pay_owed_bonuses(study).waiting == 3
    later = _past_the_lease(monkeypatch)
    settle = payments._reconcile_mturk_payment
    taken = BonusPayment.objects.get(earned=owed[1])

    def another_reconcile_takes_the_second(connection, client, payment, by, *, resend):
        BonusPayment.objects.filter(pk=taken.pk).update(lease_until=later + timedelta(hours=1))
        return settle(connection, client, payment, by, resend=resend)

    monkeypatch.setattr(payments, "_reconcile_mturk_payment", another_reconcile_takes_the_second)
    outcome = payments.reconcile_payments(connection)

    assert outcome.paid == 2
    assert list(BonusPayment.objects.values_list("pk", flat=True)) == [taken.pk], "left to the one that took it"
    assert len(standin.bonuses_sent) == 3


def test_a_reconcile_leaves_a_given_up_bulk_bonus_alone_and_asks_prolific_nothing(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    owe_bonuses(study, arrive(study, standin, django_user_model, 1), per_session=1)
    standin.fail("bonus.create", "slow-after")  # created on Prolific, its answer lost: given up, its row freed
    payments.pay_owed_bonuses(study)
    assert BonusBatch.objects.get().state == BatchState.ABANDONED
    calls = MarketCall.objects.count()

    outcome = payments.reconcile_payments(connection)

    assert (outcome.paid, outcome.waiting, outcome.errors) == (0, 0, [])
    assert MarketCall.objects.count() == calls, "nothing to ask Prolific about"
