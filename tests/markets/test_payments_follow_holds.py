"""Money follows holds on the market payer (against the market STAND-IN): a session whose completion
code is held has its bonuses left out of what the payer takes (`_claim_owed`, through the ledger's
one rule `quality.bonuses.payable`) until the hold is released, by a researcher or by approving the
session on its market; a refused hold (rejected on the market) is never paid."""

import pytest

from crowd import holds
from crowd.holds import decide_code_holds
from crowd.models import CodeHoldDecision, StudySession
from markets import payments, reviews, selectors
from markets.models import BonusPayment

from .conftest import arrive, connect_mturk, connect_prolific, ledger_paid, make_study, owe_bonuses

pytestmark = pytest.mark.django_db


def hold(session: StudySession) -> StudySession:
    """The session's code held as record_task_done holds it: a reason, no code."""
    session.completion_code = ""
    session.save(update_fields=["completion_code"])
    holds.hold(session, holds.SHARED_BROWSER, "Same browser as participant prolific-participant-000")
    return session


def paid_cents(standin) -> dict[str, int]:
    return {participant: cents for participant, cents in standin.prolific_paid_cents().items() if cents}


def test_the_payers_selection_takes_no_held_sessions_bonus_until_its_hold_is_released(standin, django_user_model):
    study = make_study()
    connection = connect_prolific(study, standin)
    free, held = arrive(study, standin, django_user_model, 2)
    hold(held)
    owe_bonuses(study, [free, held], per_session=2)
    assert selectors.panel(study)["money"]["owed"]["n"] == 2, "the panel's owed is what the payer takes"

    assert [payment.earned.study_session_id for payment in payments._claim_owed(connection)] == [free.pk] * 2

    decide_code_holds([held.pk], CodeHoldDecision.RELEASED)
    assert [payment.earned.study_session_id for payment in payments._claim_owed(connection)] == [held.pk] * 2


def test_the_payer_pays_a_held_sessions_bonus_only_after_its_release(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    free, held = arrive(study, standin, django_user_model, 2)
    hold(held)
    owe_bonuses(study, [free, held], per_session=2)

    payments.pay_owed_bonuses(study)
    assert paid_cents(standin) == {free.worker.external_id: 100}

    decide_code_holds([held.pk], CodeHoldDecision.RELEASED)
    outcome = payments.pay_owed_bonuses(study)

    assert outcome.paid == 2
    assert paid_cents(standin) == {free.worker.external_id: 100, held.worker.external_id: 100}
    assert ledger_paid(study).count() == 4


def test_approving_a_held_session_on_the_market_releases_its_bonuses(standin, django_user_model):
    study = make_study()
    connect_prolific(study, standin)
    (held,) = arrive(study, standin, django_user_model, 1)
    hold(held)
    owe_bonuses(study, [held], per_session=1)
    assert payments.pay_owed_bonuses(study).paid == 0

    reviews.approve_sessions(study, [held.pk])

    held.refresh_from_db()
    assert held.code_holds.get().decision == CodeHoldDecision.RELEASED and held.completion_code
    assert payments.pay_owed_bonuses(study).paid == 1


def test_rejecting_a_held_session_on_the_market_refuses_its_bonuses(standin, django_user_model):
    study = make_study()
    connect_mturk(study, standin)
    (held,) = arrive(study, standin, django_user_model, 1, market="mturk")
    hold(held)
    owe_bonuses(study, [held], per_session=2)

    reviews.reject_session(held, "The same person under several ids.")

    held.refresh_from_db()
    assert held.code_holds.get().decision == CodeHoldDecision.REFUSED and held.completion_code == ""
    assert payments.pay_owed_bonuses(study).paid == 0
    assert not BonusPayment.objects.exists()
