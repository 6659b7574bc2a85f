"""Fixtures of the markets tests: the market STAND-IN (tests/markets/standin.py, never the live
markets), a study connected to it, and workers who arrived from the market with bonuses owed."""

from decimal import Decimal

import pytest

from corpus.models import Market, Worker
from crowd.models import Study, StudySession, TaskKind
from markets import connections
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.validation.validation_factories import make_dataset, make_pair

from .standin import MarketStandIn


@pytest.fixture
def standin(settings):
    market = MarketStandIn(slow_seconds=2.5).start()
    settings.PROLIFIC_API_URL = f"{market.url}/api/v1/"
    settings.MTURK_ENDPOINT_URL = f"{market.url}/mturk"
    settings.MARKET_TIMEOUT_SECONDS = 1.0
    settings.MARKET_RETRY_WAIT_MAX_SECONDS = 1.0
    yield market
    market.stop()


def make_study(slug="market-study", task_kind=TaskKind.VALIDATION):
    return Study.objects.create(
        slug=slug,
        name="A study on a market",
        dataset=make_dataset(slug),
        task_kind=task_kind,
        tasks_per_batch=1,
        completion_code="DONE",
        bonus_per_catch_match=Decimal("0.50"),
        bonus_currency="GBP",
    )


def connect_prolific(study, standin, **fields):
    return connections.save_connection(
        study,
        market="prolific",
        market_study_id=standin.study_id,
        token=standin.prolific_token,
        webhook_secret="standin-webhook-secret",
        **fields,
    )


def connect_mturk(study, standin, **fields):
    return connections.save_connection(
        study,
        market="mturk",
        hit_type_id="3STANDINHITTYPE000000000000001",
        access_key_id=standin.mturk_key,
        secret_access_key="standin-secret",
        **fields,
    )


def arrive(study, standin, django_user_model, n, market=Market.PROLIFIC, completed=True, prefix=""):
    """n workers who came from the market, one session each, known to the stand-in too."""
    sessions = []
    for i in range(n):
        external = f"{prefix}{market}-participant-{i:03d}"
        user = django_user_model.objects.create_user(username=f"{market}-{study.slug}-{i}")
        worker = Worker.objects.create(user=user, market=market, external_id=external)
        session = StudySession.objects.create(
            study=study,
            worker=worker,
            external_study_id="standin-hit-1" if market == Market.MTURK else standin.study_id,
            external_session_id=f"{market}-submission-{i:03d}",
        )
        if completed:
            session.completed_at = session.started_at
            session.completion_code = session.expected_completion_code()
            session.save()
        if market == Market.PROLIFIC:
            standin.add_submission(session.external_session_id, external)
        else:
            standin.add_assignment(session.external_session_id, external, "standin-hit-1")
        sessions.append(session)
    return sessions


def owe_bonuses(study, sessions, per_session=2, amount="0.50"):
    """`per_session` earned ledger rows for each session's worker (one catch item each)."""
    rows = []
    for session in sessions:
        for _ in range(per_session):
            rows.append(
                BonusEntry.objects.create(
                    kind=BonusKind.EARNED,
                    worker=session.worker,
                    study=study,
                    study_session=session,
                    pair=make_pair(study.dataset),
                    amount=Decimal(amount),
                    currency=study.bonus_currency,
                    cause=BonusCause.CATCH_TRIAL,
                    reason=f"Catch trial matched in study {study.slug}",
                )
            )
    return rows


def ledger_paid(study):
    return BonusEntry.objects.filter(study=study, kind=BonusKind.PAID)
