"""The Prolific bulk bonus's edges that mutmut found unguarded in markets/payments.py `_pay_one_bulk`:
what is committed before Prolific is asked to pay (the batch paying, with the participants' earlier
totals, and its rows sent once, under a lease of the send), what a bulk bonus Prolific failed to
create leaves (its rows freed with Prolific's error, the press saying it), and who a press records
as the payer on the ledger, against the market STAND-IN (tests/markets/standin.py)."""

from typing import Any

import pytest
from django.db import connection as db_connection

from markets import payments
from markets.models import BatchState, BonusBatch, BonusPayment, PaymentState

from .conftest import arrive, connect_prolific, ledger_paid, make_study, owe_bonuses


@pytest.mark.django_db(transaction=True)
def test_a_bulk_bonus_is_committed_paying_and_its_rows_sent_before_prolific_is_asked_to_pay(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    paid_before, new = (s.worker.external_id for s in sessions)
    owe_bonuses(study, sessions[:1], per_session=1)
    assert payments.pay_owed_bonuses(study).paid == 1
    owe_bonuses(study, sessions, per_session=1)
    seen_at_pay: list[tuple[Any, list[Any]]] = []

    def read_what_was_committed():
        # The stand-in's own thread and database connection: it sees only what was committed.
        try:
            batch = BonusBatch.objects.values().get(state=BatchState.PAYING)
            rows = list(BonusPayment.objects.values().order_by("pk"))
            seen_at_pay.append((batch, rows))
        finally:
            db_connection.close()

    standin.before_answer["bonus.pay"] = read_what_was_committed

    assert payments.pay_owed_bonuses(study).paid == 2

    ((batch, rows),) = seen_at_pay
    assert batch["market_bulk_id"] == "bulk-2" and batch["pay_sent_at"] is not None
    assert batch["paid_before_cents"] == {paid_before: 50, new: 0}, "the reconcile compares Prolific's totals to these"
    assert len(rows) == 2
    for row in rows:
        assert (row["state"], row["batch_id"], row["attempts"]) == (PaymentState.SENT, batch["id"], 1)
        assert row["sent_at"] is not None and row["sent_at"] >= batch["pay_sent_at"]
        assert row["lease_until"] > batch["lease_until"], "a lease from the send, not the claim's"


@pytest.mark.django_db
def test_a_bulk_bonus_prolific_failed_to_create_frees_its_rows_saying_prolifics_error(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.create", "500")  # Prolific's own fault: creating pays nothing

    outcome = payments.pay_owed_bonuses(study)

    assert (outcome.paid, outcome.refused, outcome.waiting, outcome.set_aside) == (0, 2, 0, 0)
    (error,) = outcome.errors
    assert "Internal error" in error, "Prolific's words"
    assert set(BonusPayment.objects.values_list("state", "last_error")) == {(PaymentState.RELEASED, error[:300])}
    assert BonusBatch.objects.get().state == BatchState.ABANDONED


@pytest.mark.django_db
def test_a_prolific_press_records_the_researcher_who_pressed_as_the_payer_on_the_ledger(
    standin, django_user_model, researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)

    assert payments.pay_owed_bonuses(study, by=researcher).paid == 2

    assert list(ledger_paid(study).values_list("recorded_by", flat=True)) == [researcher.pk, researcher.pk]
