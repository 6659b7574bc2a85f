"""The bonus page's unpaid bonuses read as plain rows (quality/bonus_lines.py): each row carries the
bonus's own worker (their id, their market id, their account name and market), its session's
market id (empty, never a made-up one, when the session has none), its pair's id (empty for a
bonus of no pair) and when it was earned, exactly as the ledger row says; and a row's worker is
named as the worker model names itself: by their market id, else by their account name.
"""

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from corpus.models import Market, Worker
from crowd.models import Study, StudySession
from quality.bonus_lines import UnpaidLine, WorkerLine, unpaid_lines
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


def earn(
    study: Study,
    worker: Worker,
    session: StudySession,
    pair: Any,
    reason: str,
    cause: BonusCause = BonusCause.OTHER,
) -> BonusEntry:
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study,
        study_session=session,
        pair=pair,
        amount=Decimal("1.25"),
        currency=study.bonus_currency,
        cause=cause,
        reason=reason,
    )


def lines_of(study: Study) -> dict[int, UnpaidLine]:
    return {line.pk: line for line in unpaid_lines(BonusEntry.objects.filter(study=study).order_by("pk"))}


def test_a_line_carries_its_bonuses_worker_session_pair_and_time(make_worker: Callable[..., Worker]) -> None:
    dataset = make_dataset()
    study = make_study(dataset)
    turker = make_worker(username="turker-account", market=Market.MTURK, external_id="A1TURKER")
    trap = catch_pair(dataset)
    entry = earn(study, turker, session_for(study, turker, "ASSIGN-1"), trap, "a catch trial", BonusCause.CATCH_TRIAL)

    line = lines_of(study)[entry.pk]

    assert line.worker_id == turker.pk
    assert line.worker == WorkerLine(turker.pk, "A1TURKER", "turker-account", Market.MTURK)
    assert line.study_session.external_session_id == "ASSIGN-1"
    assert line.pair.pair_id == trap.pair_id != ""
    assert (line.amount, line.currency, line.cause) == (Decimal("1.25"), "USD", "catch_trial")
    assert line.created_at == entry.created_at
    assert line.created_at is not None


def test_a_session_without_a_market_id_and_a_bonus_of_no_pair_read_as_empty(
    make_worker: Callable[..., Worker],
) -> None:
    dataset = make_dataset()
    study = make_study(dataset)
    worker = make_worker(username="site-account")
    entry = earn(study, worker, session_for(study, worker, ""), None, "a thank-you bonus")

    line = lines_of(study)[entry.pk]

    assert line.study_session.external_session_id == ""
    assert line.pair.pair_id == ""


def test_a_lines_worker_is_named_by_their_market_id_else_by_their_account(
    make_worker: Callable[..., Worker],
) -> None:
    dataset = make_dataset()
    study = make_study(dataset)
    turker = make_worker(username="turker-account", market=Market.MTURK, external_id="A1TURKER")
    local = make_worker(username="site-account")
    paid_turker = earn(study, turker, session_for(study, turker, "ASSIGN-1"), None, "one")
    paid_local = earn(study, local, session_for(study, local, "S-LOCAL"), None, "two")

    lines = lines_of(study)

    assert str(lines[paid_turker.pk].worker) == str(turker) == "A1TURKER"
    assert str(lines[paid_local.pk].worker) == str(local) == "site-account"
