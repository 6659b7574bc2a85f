"""The markets' admin at the edges mutmut found unguarded: money in flight (bonus payments and
their bulk batches) and the market's call log are read only there, even to a superuser, whose
every other right the admin grants. The Celery tasks of markets/tasks.py are decorated, so mutmut
makes no mutant of them; what each calls has its own tests."""

from decimal import Decimal

import pytest
from django.db.models import Model
from django.urls import reverse
from django.utils import timezone

from markets import connections
from markets.models import BonusBatch, BonusPayment, MarketCall, MarketConnection, Payer, PaymentState
from quality.models import BonusCause, BonusEntry, BonusKind

from .conftest import make_study
from .test_mutants_market_selectors import visit

pytestmark = pytest.mark.django_db


@pytest.fixture
def connection() -> MarketConnection:
    study = make_study()
    return connections.save_connection(study, market="prolific", market_study_id="5fa0000000000000000000b2", token="t")


def _payment(connection: MarketConnection) -> BonusPayment:
    session = visit(connection.study, "paid")
    earned = BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=session.worker,
        study=connection.study,
        study_session=session,
        amount=Decimal("0.50"),
        currency="GBP",
        cause=BonusCause.CATCH_TRIAL,
        reason="Catch trial matched",
    )
    return BonusPayment.objects.create(
        earned=earned,
        connection=connection,
        state=PaymentState.SENT,
        payer=Payer.API,
        request_token=f"nli-bonus-{earned.pk}",
        lease_until=timezone.now(),
    )


def _batch(connection: MarketConnection) -> BonusBatch:
    return BonusBatch.objects.create(
        connection=connection, csv_bonuses="p1,0.50", amounts_cents={"p1": 50}, lease_until=timezone.now()
    )


def _admin_url(row: Model, view: str, *args: object) -> str:
    meta = type(row)._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("make", [_payment, _batch], ids=["bonus payment", "bonus batch"])
def test_a_superuser_can_neither_add_change_nor_delete_money_in_flight_in_the_admin(admin_client, connection, make):
    """Fails if the admin can add, edit or delete a payment row: a bonus owed (paid) again the market paid."""
    row = make(connection)
    state = row.state
    assert admin_client.get(_admin_url(row, "change", row.pk)).status_code == 200  # seen, read only
    assert admin_client.get(_admin_url(row, "add")).status_code == 403
    assert admin_client.post(_admin_url(row, "change", row.pk), {"state": "released"}).status_code == 403
    assert admin_client.post(_admin_url(row, "delete", row.pk), {"post": "yes"}).status_code == 403
    row.refresh_from_db()
    assert row.state == state


def test_a_superuser_sees_a_market_call_but_cannot_change_it(admin_client, connection):
    """Fails if the admin can edit the market's call log, which then no longer says what the market answered."""
    call = MarketCall.objects.create(connection=connection, action="pay-bonus", answer="{}", ok=False, error="timeout")
    change = _admin_url(call, "change", call.pk)
    assert admin_client.get(change).status_code == 200
    assert admin_client.post(change, {"action": "pay-bonus", "ok": "on", "error": ""}).status_code == 403
    call.refresh_from_db()
    assert (call.ok, call.error) == (False, "timeout")
