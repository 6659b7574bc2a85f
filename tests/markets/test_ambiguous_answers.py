"""Money never pays twice on an ambiguous answer: a pay answered with anything but the
market's documented "nothing was done" (a 409, a 5xx, a time-out, a connection dropped after the
request left) leaves its bonuses `unknown`, settled only by the market's own record; "not paid" is
believed only from a read of that record made after the pay and after the record could follow it.
Against the market STAND-IN (tests/markets/standin.py), each test names the money it really paid."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Market
from markets import answers, payments
from markets.clients import MarketError, MarketTimeout, MarketUnreachable
from markets.models import BatchState, BonusBatch, BonusPayment, ConnectedMarket, PaymentState

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db

# The market moved the money, then answered with something that proves nothing.
AFTER_THE_MONEY_MOVED = ("409-after", "500-after", "slow-after", "reset-after")


def _press_unpaid(make_researcher, study, batch_id):
    make_researcher(username="payer", password="payer-pass-1")
    client = Client()
    client.login(username="payer", password="payer-pass-1")
    return client.post(f"/dashboard/markets/{study.slug}/batches/{batch_id}/unpaid/", follow=True)


def _page_messages(answer):
    return [str(message) for message in answer.context["messages"]]


@pytest.mark.parametrize("fault", AFTER_THE_MONEY_MOVED)
def test_an_ambiguous_answer_after_prolific_paid_never_pays_a_bonus_twice(
    fault, standin, django_user_model, make_researcher
):
    study = make_study()
    connection = connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 3)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True  # Prolific paid; its submissions list it some minutes later
    standin.fail("bonus.pay", fault)

    first = payments.pay_owed_bonuses(study)

    assert (first.paid, first.refused, first.waiting) == (0, 0, 3)
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {PaymentState.UNKNOWN}
    batch = BonusBatch.objects.get()
    assert batch.state == BatchState.PAYING
    for _ in range(2):
        assert payments.pay_owed_bonuses(study).paid == 0
        assert payments.reconcile_payments(connection, now_please=True).paid == 0
    refused = _press_unpaid(make_researcher, study, batch.pk)
    assert any("Nothing was freed" in line for line in _page_messages(refused))
    assert standin.bulk_pay_calls == ["bulk-1"], "the bulk bonus whose answer proved nothing was never paid again"

    standin.publish()
    assert payments.pay_owed_bonuses(study).paid == 3
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.bulk_pay_calls == ["bulk-1"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}
    assert ledger_paid(study).count() == 3
    assert not AuditEntry.objects.filter(action="payment.market_not_paid").exists()


@pytest.mark.parametrize("fault", AFTER_THE_MONEY_MOVED)
def test_an_ambiguous_answer_after_mturk_paid_never_pays_a_bonus_twice(fault, standin, django_user_model):
    study = make_study()
    connection = connect_mturk(study, standin)
    sessions = arrive(study, standin, django_user_model, 2, market=Market.MTURK)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("SendBonus", fault)

    first = payments.pay_owed_bonuses(study)

    assert first.paid == 1 and first.waiting == 1  # only the first send met the fault
    assert BonusPayment.objects.get().state == PaymentState.UNKNOWN
    for _ in range(2):
        assert payments.reconcile_payments(connection, now_please=True).paid == 0
        assert payments.pay_owed_bonuses(study).paid == 0
    assert BonusPayment.objects.get().record_read_at is not None
    standin.publish()
    assert payments.reconcile_payments(connection, now_please=True).paid == 1
    assert standin.mturk_paid() == {s.worker.external_id: Decimal("0.50") for s in sessions}
    assert ledger_paid(study).count() == 2


def test_not_paid_pressed_while_prolifics_record_lags_is_refused_and_frees_nothing(
    standin, django_user_model, make_researcher
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.record_lags = True
    standin.fail("bonus.pay", "slow-after")
    payments.pay_owed_bonuses(study)
    batch = BonusBatch.objects.get()

    answer = _press_unpaid(make_researcher, study, batch.pk)

    (line,) = _page_messages(answer)
    assert "Nothing was freed" in line and "press again" in line
    batch.refresh_from_db()
    assert batch.state == BatchState.PAYING
    assert batch.pay_sent_at and batch.record_read_at and batch.record_read_at >= batch.pay_sent_at, "Prolific was read"
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {PaymentState.UNKNOWN}
    assert payments.pay_owed_bonuses(study).paid == 0
    assert standin.bulk_pay_calls == ["bulk-1"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


def test_a_read_of_the_record_settles_an_attempt_only_when_made_after_it_had_time_to_show(settings):
    settings.MARKET_RECORD_SETTLE_SECONDS = 900
    attempt = timezone.now()

    assert not answers.read_settles(attempt, None), "never read"
    assert not answers.read_settles(attempt, attempt - timedelta(seconds=1)), "read before the attempt"
    assert not answers.read_settles(attempt, attempt), "read as it was made"
    assert not answers.read_settles(attempt, attempt + timedelta(seconds=899)), "read before the record followed"
    assert answers.read_settles(attempt, attempt + timedelta(seconds=900))


def test_not_paid_after_the_record_had_time_to_follow_frees_the_bonuses_once_with_an_audit_entry(
    standin, django_user_model, make_researcher, monkeypatch
):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "slow-before")  # Prolific paid nothing and said nothing in time
    payments.pay_owed_bonuses(study)
    batch = BonusBatch.objects.get()
    # The server's clock, the settle time later: the press reads Prolific's record again then.
    later = timezone.now() + timedelta(seconds=settings.MARKET_RECORD_SETTLE_SECONDS + 1)
    monkeypatch.setattr(payments, "_now", lambda: later)

    answer = _press_unpaid(make_researcher, study, batch.pk)

    assert any("marked as not paid: 2 bonus(es)" in line for line in _page_messages(answer))
    batch.refresh_from_db()
    assert batch.state == BatchState.ABANDONED and batch.record_read_at == later
    (entry,) = AuditEntry.objects.filter(action="payment.market_not_paid")
    assert entry.actor == "payer" and entry.subject_id == str(batch.pk)
    assert entry.after["released_bonuses"] == 2 and entry.team_id == study.team_id
    assert payments.pay_owed_bonuses(study).paid == 2
    assert standin.bulk_pay_calls == ["bulk-2"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


def test_prolifics_documented_validation_refusal_frees_the_bonuses_at_once(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    sessions = arrive(study, standin, django_user_model, 2)
    owe_bonuses(study, sessions, per_session=1)
    standin.fail("bonus.pay", "400")  # a validation error naming a field: nothing was done

    first = payments.pay_owed_bonuses(study)

    assert (first.paid, first.refused, first.waiting) == (0, 2, 0)
    assert BonusBatch.objects.get().state == BatchState.ABANDONED
    assert set(BonusPayment.objects.values_list("state", flat=True)) == {PaymentState.RELEASED}
    assert payments.pay_owed_bonuses(study).paid == 2
    assert standin.bulk_pay_calls == ["bulk-2"]
    assert standin.prolific_paid_cents() == {s.worker.external_id: 50 for s in sessions}


@pytest.mark.parametrize(
    ("market", "error", "nothing_paid"),
    [
        (ConnectedMarket.PROLIFIC, MarketError("validation", status=400), True),
        (ConnectedMarket.PROLIFIC, MarketError("token", status=401), True),
        (ConnectedMarket.PROLIFIC, MarketError("permission", status=403), True),
        (ConnectedMarket.PROLIFIC, MarketError("not found", status=404), False),
        (ConnectedMarket.PROLIFIC, MarketError("conflict", status=409), False),
        (ConnectedMarket.PROLIFIC, MarketError("rate limit", status=429), False),
        (ConnectedMarket.PROLIFIC, MarketError("its fault", status=500), False),
        (ConnectedMarket.PROLIFIC, MarketError("gateway", status=502), False),
        (ConnectedMarket.PROLIFIC, MarketTimeout("no answer"), False),
        (ConnectedMarket.PROLIFIC, MarketUnreachable("dropped"), False),
        (ConnectedMarket.MTURK, MarketError("refused", status=400, code="RequestError"), True),
        (ConnectedMarket.MTURK, MarketError("credentials", status=400, code="UnrecognizedClientException"), True),
        (ConnectedMarket.MTURK, MarketError("other", status=400, code="SomethingElse"), False),
        (ConnectedMarket.MTURK, MarketError("conflict", status=409, code="ConflictException"), False),
        (ConnectedMarket.MTURK, MarketError("its fault", status=500, code="ServiceFault"), False),
        (ConnectedMarket.MTURK, MarketTimeout("no answer"), False),
    ],
)
def test_only_the_markets_documented_refusals_prove_nothing_was_paid(market, error, nothing_paid):
    assert answers.nothing_was_paid(market, error) is nothing_paid
