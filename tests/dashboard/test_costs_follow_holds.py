"""The costs page's money per study follows holds: a held code's tasks and bonuses are apart (held,
neither owed nor spent) until a researcher decides; a refused code's are in no figure; a released
code's count as any other's. The bonuses come from the ledger's tally, the tasks from the sessions."""

from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.utils import timezone

from corpus.scope import EVERYTHING
from crowd.holds import decide_code_holds, hold
from crowd.models import CodeHoldDecision, StudySession
from dashboard.queries.costs import Money, _studies
from quality import bonuses
from quality.guessers import GUESSER
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db

REASON = "Labels at chance so far (sequential guesser test)."


def gbp(amount: str) -> Money:
    return Money.of(Decimal(amount), "GBP")


def usd(amount: Decimal | int) -> Money:
    return Money.of(amount, "USD")


def test_held_refused_and_released_codes_money_on_the_costs_page(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(4)]
    study = make_study(dataset, bonus="0.50", currency="GBP")
    study.payment_per_task = Decimal("0.10")
    study.save(update_fields=["payment_per_task"])
    visits = {}
    for name, tasks, matched in (("ok", 3, 2), ("waiting", 5, 1), ("refused", 7, 3), ("released", 11, 1)):
        worker = make_worker(username=name)
        session = session_for(study, worker, name)
        StudySession.objects.filter(pk=session.pk).update(tasks_done=tasks, completed_at=timezone.now())
        earned = bonuses.record_catch_bonuses(worker, session, [SimpleNamespace(pair_id=t.pk) for t in traps[:matched]])
        visits[name] = (session, earned)
    for name in ("waiting", "refused", "released"):
        hold(visits[name][0], GUESSER, REASON)
    decide_code_holds([visits["refused"][0].pk], CodeHoldDecision.REFUSED)
    decide_code_holds([visits["released"][0].pk], CodeHoldDecision.RELEASED)
    bonuses.mark_paid(study, [visits["ok"][1][0].pk])
    # The study pays in dollars from now on: its money is kept per currency.
    study.bonus_currency = "USD"
    study.save(update_fields=["bonus_currency"])
    dollars = session_for(study, make_worker(username="dollars"), "dollars")
    paid_in_dollars, owed_in_dollars = bonuses.record_catch_bonuses(
        dollars.worker, dollars, [SimpleNamespace(pair_id=t.pk) for t in traps[:2]]
    )
    bonuses.mark_paid(study, [paid_in_dollars.pk])

    quiet = make_study(dataset, slug="quiet-study")

    costs = _studies(EVERYTHING)
    cost = costs[study.pk]

    # Tasks: ok's and released's count; waiting's are held; refused's are in neither.
    assert (cost.tasks, cost.held_tasks) == (3 + 11, 5)
    # Priced in the study's currency now.
    assert (cost.task_money, cost.held_task_money) == (usd(Decimal("1.40")), usd(Decimal("0.50")))
    # Bonuses: one of ok's paid, the other and released's owed; waiting's held; refused's nowhere.
    assert cost.bonuses_paid == gbp("0.50") + usd(paid_in_dollars.amount)
    assert cost.bonuses_owed == gbp("1.00") + usd(owed_in_dollars.amount)
    assert cost.bonuses_held == gbp("0.50") + usd(0)
    # A study nobody visited: nothing, in every figure.
    assert (costs[quiet.pk].tasks, costs[quiet.pk].held_tasks) == (0, 0)
    assert costs[quiet.pk].bonuses_owed.is_zero and costs[quiet.pk].bonuses_held.is_zero
