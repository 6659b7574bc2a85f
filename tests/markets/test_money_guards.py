"""The money path's guards that only a hard case shows: a pay whose outcome is
unknown while the market's record lags, a 5xx after the market paid, a participant paid before,
"mark bulk bonus as not paid", and bonuses of workers the market cannot pay (against the market
STAND-IN, tests/markets/standin.py; each test names the money the stand-in really paid)."""

from decimal import Decimal

import pytest
from django.test import Client

from corpus.models import Market, Worker
from crowd.models import StudySession
from markets import payments
from markets.models import BatchState, BonusBatch, BonusPayment, PaymentState

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


# --- item 1: an outcome unknown, the market's record behind --------------------------------------


def test_a_lost_answer_while_prolifics_record_lags_is_never_paid_again(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True  # Prolific paid, its submissions do not list it yet
    standin.fail("bonus.pay", "slow-after")

    first = payments.pay_owed_bonuses(study)
    assert (first.paid, first.waiting) == (0, 3)
    for _ in range(2):
        again = payments.pay_owed_bonuses(study)
        assert (again.paid, again.waiting) == (0, 3)
    assert payments.reconcile_payments(connection, now_please=True).paid == 0

    assert standin.bulk_pay_calls == ["bulk-1"], "the unsure bulk bonus was never paid again"
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}
    assert ledger_paid(study).count() == 0
    standin.publish()
    settled = payments.pay_owed_bonuses(study)
    assert settled.paid == 3
    assert standin.bulk_pay_calls == ["bulk-1"]
    assert ledger_paid(study).count() == 3


def test_a_new_bonus_of_a_participant_with_an_unsure_bulk_bonus_waits_for_it(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("bonus.pay", "slow-after")
    payments.pay_owed_bonuses(study)
    (later,) = owe_bonuses(study, sessions[:1], per_session=1)

    payments.pay_owed_bonuses(study)

    # Paying it now would make the participant's total on Prolific ambiguous for the reconcile.
    assert not BonusPayment.objects.filter(earned=later).exists()
    assert standin.bulk_pay_calls == ["bulk-1"]
    standin.publish()
    payments.pay_owed_bonuses(study)  # confirms bulk-1 first, then pays the new bonus
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.prolific_paid_cents() == {sessions[0].worker.external_id: 100, sessions[1].worker.external_id: 50}
    assert ledger_paid(study).count() == 3


def test_an_mturk_bonus_whose_answer_was_lost_is_not_paid_again_while_the_listing_lags(standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("SendBonus", "slow-after")

    first = payments.pay_owed_bonuses(study)
    assert (first.paid, first.waiting) == (0, 1)
    for _ in range(2):
        assert payments.reconcile_payments(connection, now_please=True).paid == 0
        assert payments.pay_owed_bonuses(study).paid == 0

    assert standin.mturk_paid() == {sessions[0].worker.external_id: Decimal("0.50")}
    standin.publish()
    assert payments.reconcile_payments(connection, now_please=True).paid == 1
    assert standin.mturk_paid() == {sessions[0].worker.external_id: Decimal("0.50")}
    assert ledger_paid(study).count() == 1


# --- item 2: a 5xx from the pay call ---------------------------------------------------------


def test_a_5xx_from_prolifics_pay_keeps_the_bulk_bonus_unsure_and_never_pays_it_again(standin, django_user_model):
    study = make_study()
    sessions = arrive(study, standin, django_user_model, 2)
    connect_prolific(study, standin)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("bonus.pay", "500-after")  # Prolific paid, then answered 500

    first = payments.pay_owed_bonuses(study)

    assert (first.paid, first.refused, first.waiting) == (0, 0, 2)
    assert BonusBatch.objects.get().state == BatchState.PAYING
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {PaymentState.UNKNOWN}
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.bulk_pay_calls == ["bulk-1"]
    standin.publish()
    assert payments.pay_owed_bonuses(study).paid == 2
    assert standin.bulk_pay_calls == ["bulk-1"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


def test_a_5xx_from_mturks_send_bonus_is_settled_from_the_listing(standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("SendBonus", "500-after")

    first = payments.pay_owed_bonuses(study)

    assert (first.paid, first.refused, first.waiting) == (0, 0, 1)
    assert BonusPayment.objects.get().state == PaymentState.UNKNOWN
    assert payments.reconcile_payments(connection, now_please=True).paid == 1
    assert len(standin.bonuses_sent) == 1
    assert ledger_paid(study).count() == 1


# --- item 3: a participant paid before -------------------------------------------------------


def _paid_once_then_owed_again(study, standin, django_user_model):
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    assert payments.pay_owed_bonuses(study).paid == 2
    owe_bonuses(study, sessions, per_session=1)
    return connection, sessions


def test_earlier_bonuses_on_prolific_never_make_an_unpaid_bulk_bonus_look_paid(standin, django_user_model):
    study = make_study()
    connection, sessions = _paid_once_then_owed_again(study, standin, django_user_model)
    standin.fail("bonus.pay", "slow-before")  # no answer in time, and nothing paid

    second = payments.pay_owed_bonuses(study)
    assert second.waiting == 2
    outcome = payments.reconcile_payments(connection, now_please=True)

    assert (outcome.paid, outcome.waiting) == (0, 2)
    assert BonusBatch.objects.get(market_bulk_id="bulk-2").state == BatchState.PAYING
    assert ledger_paid(study).count() == 2
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


def test_a_participant_paid_before_is_confirmed_when_the_new_bulk_bonus_shows(standin, django_user_model):
    study = make_study()
    connection, sessions = _paid_once_then_owed_again(study, standin, django_user_model)
    standin.fail("bonus.pay", "slow-after")

    assert payments.pay_owed_bonuses(study).waiting == 2
    outcome = payments.reconcile_payments(connection)

    assert outcome.paid == 2
    assert BonusBatch.objects.get(market_bulk_id="bulk-2").paid_before_cents == {
        s.worker.external_id: 50 for s in sessions
    }
    assert ledger_paid(study).count() == 4
    assert standin.prolific_paid_cents() == {s.worker.external_id: 100 for s in sessions}
    assert standin.bulk_pay_calls == ["bulk-1", "bulk-2"]


# --- item 4: "Prolific shows it was not paid" ------------------------------------------------


def _press_unpaid(make_researcher, study, batch_id):
    make_researcher(username="payer", password="payer-pass-1")
    client = Client()
    client.login(username="payer", password="payer-pass-1")
    return client.post(f"/dashboard/markets/{study.slug}/batches/{batch_id}/unpaid/")


def test_marking_a_paid_bulk_bonus_not_paid_frees_nothing(standin, django_user_model, make_researcher):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    payments.pay_owed_bonuses(study)
    batch = BonusBatch.objects.get()

    answer = _press_unpaid(make_researcher, study, batch.pk)

    assert answer.status_code == 302
    batch.refresh_from_db()
    assert batch.state == BatchState.PAID
    assert not BonusPayment.objects.exists(), "confirmed: the ledger holds them, no payment row is left"
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.bulk_pay_calls == ["bulk-1"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


def test_another_studys_bulk_bonus_cannot_be_marked_not_paid_from_this_study(
    standin, django_user_model, make_researcher
):
    paying = make_study(slug="paying-study")
    connect_prolific(paying, standin)
    sessions = arrive(paying, standin, django_user_model, 1)
    owe_bonuses(paying, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-after")
    payments.pay_owed_bonuses(paying)
    batch = BonusBatch.objects.get()
    other = make_study(slug="other-study")

    answer = _press_unpaid(make_researcher, other, batch.pk)

    assert answer.status_code == 404
    batch.refresh_from_db()
    assert batch.state == BatchState.PAYING
    assert BonusPayment.objects.get().state == PaymentState.UNKNOWN


def test_a_bulk_bonus_marked_not_paid_is_paid_by_the_next_press_once(
    standin, django_user_model, make_researcher, settings
):
    settings.MARKET_RECORD_SETTLE_SECONDS = 0  # a record that shows a payment as soon as it is made
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-before")  # nothing paid, no answer in time
    payments.pay_owed_bonuses(study)
    batch = BonusBatch.objects.get()

    _press_unpaid(make_researcher, study, batch.pk)

    batch.refresh_from_db()
    assert batch.state == BatchState.ABANDONED
    assert payments.pay_owed_bonuses(study).paid == 2
    assert standin.bulk_pay_calls == ["bulk-2"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


def test_marking_not_paid_asks_prolific_first_and_confirms_a_bulk_bonus_it_shows_paid(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("bonus.pay", "slow-after")
    payments.pay_owed_bonuses(study)
    standin.publish()  # Prolific's record now shows it; the researcher looked too early

    answer = _press_unpaid(make_researcher, study, BonusBatch.objects.get().pk)

    assert answer.status_code == 302
    assert BonusBatch.objects.get().state == BatchState.PAID
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.bulk_pay_calls == ["bulk-1"]
    assert ledger_paid(study).count() == 2


def test_marking_not_paid_frees_nothing_while_prolific_cannot_be_asked(
    standin, django_user_model, make_researcher, settings
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 1)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-before")
    payments.pay_owed_bonuses(study)
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9/api/v1/"  # nothing listens there

    _press_unpaid(make_researcher, study, BonusBatch.objects.get().pk)

    assert BonusBatch.objects.get().state == BatchState.PAYING
    assert BonusPayment.objects.get().state == PaymentState.UNKNOWN


# --- item 5: bonuses the connected market cannot pay -----------------------------------------


def _stranger(study, django_user_model, market, external_id):
    user = django_user_model.objects.create_user(username=f"stranger-{market}")
    worker = Worker.objects.create(user=user, market=market, external_id=external_id)
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"{market}-visit")


def test_bonuses_of_workers_not_from_prolific_are_released_not_left_claimed(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 1)
    strangers = [
        _stranger(study, django_user_model, Market.MTURK, "A1MTURKWORKER"),
        _stranger(study, django_user_model, Market.LOCAL, ""),
    ]
    owe_bonuses(study, sessions + strangers, per_session=1)

    outcome = payments.pay_owed_bonuses(study)

    assert (outcome.paid, outcome.refused) == (1, 2)
    left = BonusPayment.objects.filter(earned__study_session__in=strangers)
    assert [p.state for p in left] == [PaymentState.RELEASED] * 2
    assert all("Not a Prolific participant" in p.last_error for p in left)
    assert standin.prolific_paid_cents() == {sessions[0].worker.external_id: 50}


def test_bonuses_of_workers_not_from_mturk_are_released(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    stranger = _stranger(study, django_user_model, Market.PROLIFIC, "prolific-someone")
    owe_bonuses(study, [*sessions, stranger], per_session=1)

    outcome = payments.pay_owed_bonuses(study)

    assert (outcome.paid, outcome.refused) == (1, 1)
    assert BonusPayment.objects.get(earned__study_session=stranger).state == PaymentState.RELEASED
    assert len(standin.bonuses_sent) == 1
