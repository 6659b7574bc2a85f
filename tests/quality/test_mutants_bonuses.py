"""The bonus ledger's edges that mutmut found unguarded (quality/bonuses.py): the adversarial app's
`record_bonus` writes one earned row per worker, item and visit, only for a visit and an amount above
zero, in the study's currency, and says on an open-link study's row that it is never paid."""

from decimal import Decimal

import pytest

from crowd.holds import OPEN_LINK_NO_BONUS
from crowd.models import Study
from quality import bonuses
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db

REASON = f"{bonuses.FOOLED_MODEL_REASON} (study val-study, round 1)"
FOOLED = BonusCause.FOOLED_MODEL


@pytest.fixture
def visit(make_worker):
    dataset = make_dataset()
    study = make_study(dataset, currency="GBP")
    worker = make_worker()
    return worker, session_for(study, worker), make_pair(dataset)


def test_a_bonus_for_an_item_is_recorded_once_in_the_studys_currency(visit):
    worker, session, pair = visit

    row = bonuses.record_bonus(worker, session, pair, Decimal("0.01"), REASON, cause=FOOLED)

    assert row is not None
    assert (row.kind, row.worker, row.study, row.study_session, row.pair) == (
        BonusKind.EARNED,
        worker,
        session.study,
        session,
        pair,
    )
    assert (row.amount, row.currency, row.cause, row.reason) == (Decimal("0.01"), "GBP", "fooled_model", REASON)
    assert bonuses.record_bonus(worker, session, pair, Decimal("0.50"), REASON, cause=FOOLED) is None, "counted once"
    assert BonusEntry.objects.count() == 1


def test_another_item_or_another_visit_is_a_bonus_of_its_own(visit):
    worker, session, pair = visit
    bonuses.record_bonus(worker, session, pair, Decimal("1.00"), REASON, cause=FOOLED)
    another_visit = session_for(session.study, worker, session_id="S2")

    assert (
        bonuses.record_bonus(worker, session, make_pair(pair.dataset), Decimal("1.00"), REASON, cause=FOOLED)
        is not None
    )
    assert bonuses.record_bonus(worker, another_visit, pair, Decimal("1.00"), REASON, cause=FOOLED) is not None
    assert BonusEntry.objects.count() == 3


def test_no_bonus_is_recorded_without_a_visit_or_an_amount_above_zero(visit):
    worker, session, pair = visit

    assert bonuses.record_bonus(worker, None, pair, Decimal("1.00"), REASON, cause=FOOLED) is None
    assert bonuses.record_bonus(worker, session, pair, None, REASON, cause=FOOLED) is None
    assert bonuses.record_bonus(worker, session, pair, Decimal("0"), REASON, cause=FOOLED) is None
    assert bonuses.record_bonus(worker, session, pair, Decimal("-1.00"), REASON, cause=FOOLED) is None
    assert not BonusEntry.objects.exists()


def test_an_open_link_studys_bonus_says_it_is_never_paid(visit):
    worker, session, pair = visit
    Study.objects.filter(pk=session.study_id).update(open_link_unverified=True)
    session.refresh_from_db()

    row = bonuses.record_bonus(worker, session, pair, Decimal("1.00"), REASON, cause=FOOLED)

    assert row is not None and row.reason.startswith(REASON) and OPEN_LINK_NO_BONUS in row.reason
    assert row.cause == "fooled_model"
