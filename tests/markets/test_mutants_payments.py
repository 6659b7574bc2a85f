"""The money path's edges that mutmut found unguarded (markets/payments.py): what a researcher's
release frees (only this study's rows in that state, never a bonus in flight), what a payment file
lists and claims, "mark paid" by hand (without a connection, on a set-aside bonus, refused beside
the API payer), the line a press shows, and what a refused "not paid" and the audit entry of an
accepted one say (against the market STAND-IN, tests/markets/standin.py)."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Market, Worker
from markets import payments
from markets.answers import settled_after
from markets.models import BatchState, BonusBatch, BonusPayment, Payer, PaymentState
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

    assert payments.release_set_aside(study) == 1

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
    assert {e.pk for e in payments.claim_for_file(study, "prolific")} == {owed[1].pk, owed[2].pk}
    other = make_study(slug="other-study")
    connect_mturk(other, standin)
    foreign = arrive(other, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(other, foreign, per_session=1)
    assert len(payments.claim_for_file(other, "mturk")) == 1

    assert payments.release_file_claims(study) == 2

    for row in BonusPayment.objects.filter(earned__in=owed[1:]):
        assert (row.state, row.last_error) == (PaymentState.RELEASED, payments.HAND_RELEASED)
    in_flight.refresh_from_db()
    assert (in_flight.payer, in_flight.state) == (Payer.API, PaymentState.SENT), "the API payer's send is not freed"
    assert BonusPayment.objects.get(earned__study=other).state == PaymentState.SENT, "another study's file"
    assert payments.release_file_claims(study) == 0, "a file released already frees nothing more"


def test_marking_paid_by_hand_without_a_connection_records_who_paid(standin, django_user_model, researcher):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    owed = owe_bonuses(study, sessions, per_session=1)

    result = payments.mark_paid_by_hand(study, [str(row.pk) for row in owed], by=researcher)

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


def test_the_audit_entry_of_a_not_paid_names_when_the_pay_was_sent_and_the_record_read(
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
    assert entry.after["pay_sent_at"] == batch.pay_sent_at.isoformat()
    assert entry.after["record_read_at"] == later.isoformat()


def test_a_left_out_bonus_is_listed_and_never_claimed_and_the_files_other_bonuses_still_are(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owed = owe_bonuses(study, sessions, per_session=1)
    Worker.objects.filter(pk=sessions[0].worker_id).update(external_id="")  # no participant id: by hand

    assert [e.pk for e in payments.claim_for_file(study, "left-out")] == [owed[0].pk]
    assert not BonusPayment.objects.exists(), "the left-out list claims nothing"
    assert {e.pk for e in payments.claim_for_file(study, "prolific")} == {owed[1].pk, owed[2].pk}
    with pytest.raises(ValueError, match=r"^Payment files: prolific, mturk, left-out\.$"):
        payments.claim_for_file(study, "paypal")


def test_a_study_without_a_connection_lists_its_files_bonuses_and_claims_nothing(standin, django_user_model):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    owed = owe_bonuses(study, sessions, per_session=1)

    assert [e.pk for e in payments.claim_for_file(study, "prolific")] == [row.pk for row in owed]
    assert payments.claim_for_file(study, "mturk") == []
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

    assert [e.pk for e in payments.claim_for_file(study, "prolific")] == [row.pk]

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

    result = payments.mark_paid_by_hand(study, [owed[1].pk], by=researcher)

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
        payments.mark_paid_by_hand(study, [row.pk for row in owed])

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
