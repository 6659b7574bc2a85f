"""A discretionary bonus and a catch trial's bonus, as the ledger records them (quality/bonuses.py's
`give_discretionary_bonus` and `record_catch_bonuses`): each refusal in its own words with nothing
written, the reason as typed with its spaces folded, the row's every field, and the audit entry
that says who gave what to whom and why."""

from decimal import Decimal
from types import SimpleNamespace

import pytest

from audit.models import AuditEntry
from crowd.holds import OPEN_LINK_NO_BONUS
from crowd.models import Study
from quality import bonuses
from quality.models import BonusEntry
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db


@pytest.fixture
def visit(make_worker):
    study = make_study(make_dataset(), currency="GBP")
    return session_for(study, make_worker(), "S-77")


@pytest.mark.parametrize(
    ("amount", "reason", "refusal"),
    [
        ("1.00", "", "A discretionary bonus needs a reason (the MTurk worker reads it; it is your record)."),
        ("1.00", " \n\t ", "A discretionary bonus needs a reason (the MTurk worker reads it; it is your record)."),
        ("1.00", None, "A discretionary bonus needs a reason (the MTurk worker reads it; it is your record)."),
        ("one pound", "Thanks", "The amount must be a number, such as 1.50."),
        ("0", "Thanks", "The amount must be more than 0."),
        ("0.004", "Thanks", "The amount must be more than 0."),
        ("-2.00", "Thanks", "The amount must be more than 0."),
    ],
)
def test_a_discretionary_bonus_is_refused_in_its_own_words_and_nothing_is_written(visit, amount, reason, refusal):
    with pytest.raises(bonuses.PaymentRefused) as refused:
        bonuses.give_discretionary_bonus(visit, amount, reason)
    assert str(refused.value) == refusal
    assert not BonusEntry.objects.exists() and not AuditEntry.objects.exists()


def test_a_discretionary_bonus_is_one_earned_row_of_the_sessions_worker_and_one_audit_entry(visit, researcher):
    row = bonuses.give_discretionary_bonus(visit, "2.499", "  Careful   work,\n thank you ", by=researcher)

    stored = BonusEntry.objects.get()
    assert stored == row
    assert (stored.kind, stored.worker_id, stored.study_id, stored.study_session_id, stored.pair_id) == (
        "earned",
        visit.worker_id,
        visit.study_id,
        visit.pk,
        None,
    )
    assert (stored.amount, stored.currency, stored.cause, stored.recorded_by) == (
        Decimal("2.50"),
        "GBP",
        "other",
        researcher,
    )
    assert stored.reason == "Discretionary bonus: Careful work, thank you"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_id, entry.subject_type, entry.subject_id) == (
        "payment.discretionary_bonus",
        researcher.pk,
        "crowd.studysession",
        str(visit.pk),
    )
    assert (entry.team_id, entry.reason) == (visit.study.team_id, "Careful work, thank you")
    assert entry.after == {"amount": "2.50", "currency": "GBP", "worker": visit.worker_id}


def test_an_open_link_studys_discretionary_bonus_says_it_is_never_paid(visit):
    Study.objects.filter(pk=visit.study_id).update(open_link_unverified=True)
    visit.refresh_from_db()

    row = bonuses.give_discretionary_bonus(visit, "1", "Thanks")

    assert row.reason == f"Discretionary bonus: Thanks ({OPEN_LINK_NO_BONUS})"


def test_a_catch_bonus_needs_a_visit_a_match_and_a_bonus_above_zero(visit):
    trap = catch_pair(visit.study.dataset)
    matched = [SimpleNamespace(pair_id=trap.pk)]

    assert bonuses.record_catch_bonuses(visit.worker, None, matched) == []
    assert bonuses.record_catch_bonuses(visit.worker, visit, []) == []
    # None: a study made in memory, not saved (the column is NOT NULL).
    for bonus in (None, Decimal("0")):
        visit.study.bonus_per_catch_match = bonus
        assert bonuses.record_catch_bonuses(visit.worker, visit, matched) == []
    assert not BonusEntry.objects.exists()
    visit.study.bonus_per_catch_match = Decimal("0.01")

    (row,) = bonuses.record_catch_bonuses(visit.worker, visit, matched)

    assert (row.amount, row.currency, row.cause, row.pair_id) == (Decimal("0.01"), "GBP", "catch_trial", trap.pk)
