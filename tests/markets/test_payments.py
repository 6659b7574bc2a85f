"""Bonuses paid on the market from the ledger: exactly what is owed, once, whatever happens
(against the market STAND-IN, tests/markets/standin.py)."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from corpus.models import Market
from markets import payments
from markets.models import BatchState, BonusBatch, BonusPayment, MarketCall, PaymentState

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


def test_one_action_pays_what_the_ledger_owes_on_prolific_in_two_steps(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owe_bonuses(study, sessions, per_session=2)

    outcome = payments.pay_owed_bonuses(study)

    assert (outcome.paid, outcome.amount, outcome.waiting, outcome.refused) == (6, Decimal("3.00"), 0, 0)
    assert standin.prolific_paid_cents() == {s.worker.external_id: 100 for s in sessions}
    assert len(standin.bulk_pay_calls) == 1
    assert ledger_paid(study).count() == 6
    batch = BonusBatch.objects.get()
    assert batch.state == BatchState.PAID and batch.csv_bonuses.count("\n") == 3
    actions = list(MarketCall.objects.order_by("id").values_list("action", "ok"))
    assert ("bonus.create", True) in actions and ("bonus.pay", True) in actions
    # Pressing again pays nothing: nothing is owed.
    again = payments.pay_owed_bonuses(study)
    assert again.paid == 0 and len(standin.bulk_pay_calls) == 1


def test_a_rate_limit_is_waited_out_and_a_refusal_frees_the_bonuses(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.create", "429")
    standin.fail("bonus.pay", "429")

    outcome = payments.pay_owed_bonuses(study)

    assert outcome.paid == 2
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}
    assert MarketCall.objects.filter(status_code=429).count() == 2


def test_a_pay_that_timed_out_is_confirmed_from_prolifics_record_and_never_sent_again(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 4)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-after")  # Prolific pays, its answer comes after our time-out

    first = payments.pay_owed_bonuses(study)

    assert (first.paid, first.waiting) == (0, 4)
    assert ledger_paid(study).count() == 0
    assert BonusPayment.objects.filter(state=PaymentState.UNKNOWN).count() == 4

    retry = payments.pay_owed_bonuses(study)

    assert retry.paid == 4
    assert len(standin.bulk_pay_calls) == 1, "the bulk bonus was paid once"
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}
    assert ledger_paid(study).count() == 4
    assert payments.reconcile_payments(connection).paid == 0


def test_a_create_that_timed_out_frees_the_bonuses_for_the_next_press(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.create", "slow-after")

    first = payments.pay_owed_bonuses(study)
    assert first.paid == 0 and first.refused == 2
    second = payments.pay_owed_bonuses(study)

    assert second.paid == 2
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}
    assert len(standin.bulk_bonuses) == 2 and len(standin.bulk_pay_calls) == 1


def test_mturk_sends_one_bonus_per_ledger_row_under_its_own_token(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    owed = owe_bonuses(study, sessions, per_session=2)

    outcome = payments.pay_owed_bonuses(study)

    assert outcome.paid == 4
    assert len(standin.bonuses_sent) == 4
    assert standin.tokens == {f"nli-bonus-{row.pk}" for row in owed}
    assert standin.mturk_paid() == {s.worker.external_id: Decimal("1.00") for s in sessions}


def test_mturk_retry_after_a_timeout_pays_nothing_twice(standin, django_user_model, settings):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=2)
    standin.fail("SendBonus", "slow-after")

    first = payments.pay_owed_bonuses(study)
    assert (first.paid, first.waiting) == (1, 1)

    outcome = payments.reconcile_payments(connection, now_please=True)

    assert outcome.paid == 1
    assert len(standin.bonuses_sent) == 2
    assert ledger_paid(study).count() == 2


def test_an_mturk_bonus_sent_by_a_payer_that_died_is_confirmed_from_the_listing_not_sent_again(
    standin, django_user_model
):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 1, market=Market.MTURK)
    owed = owe_bonuses(study, sessions, per_session=2)
    # As a payer leaves them when it dies after MTurk paid and before its commit: the rows sent,
    # their leases run out, and MTurk's record holds both bonuses.
    for row in owed:
        payment = BonusPayment.objects.create(
            earned=row,
            connection=connection,
            state=PaymentState.SENT,
            request_token=f"nli-bonus-{row.pk}",
            lease_until=timezone.now() - timedelta(seconds=1),
        )
        payment.earned = row
        standin._send_bonus(
            {
                "WorkerId": row.worker.external_id,
                "AssignmentId": row.study_session.external_session_id,
                "BonusAmount": "0.50",
                "Reason": payments._mturk_reason(payment),
                "UniqueRequestToken": payment.request_token,
            }
        )

    outcome = payments.pay_owed_bonuses(study)

    assert outcome.paid == 2
    assert len(standin.bonuses_sent) == 2, "nothing sent again"
    assert not BonusPayment.objects.exists(), "paid is stored once: in the ledger"
    assert ledger_paid(study).count() == 2


def test_a_pay_prolific_refuses_frees_the_bonuses_and_pays_nothing(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.bulk_bonuses["bulk-1"] = {"lines": {}, "pay_calls": 0}  # the next bulk bonus is bulk-2
    original = standin._pay_bonuses
    standin._pay_bonuses = lambda bulk: (400, {"error": {"detail": "Insufficient balance."}})

    first = payments.pay_owed_bonuses(study)

    assert first.refused == 2 and "Insufficient balance" in first.errors[0]
    assert BatchState.ABANDONED in BonusBatch.objects.values_list("state", flat=True)
    standin._pay_bonuses = original
    second = payments.pay_owed_bonuses(study)
    assert second.paid == 2
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}
