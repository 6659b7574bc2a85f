"""The bonus page's study summaries (quality/bonuses.py `study_summaries`), every figure at once: the
unpaid count and amount are the earned rows without a payment whose money may go (a paid row is no
unpaid bonus, a held or refused code's bonus is none either), the held count and amount those whose
session has an undecided hold (a refused one is not held), earned and paid the ledger's totals by
kind; only studies with a bonus, by slug."""

from decimal import Decimal

import pytest

from crowd import holds
from crowd.models import CodeHoldDecision
from quality import bonuses
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def earned(session, amount):
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=session.worker,
        study=session.study,
        study_session=session,
        pair=make_pair(session.study.dataset),
        amount=Decimal(amount),
        currency="USD",
        cause=BonusCause.FOOLED_MODEL,
        reason=f"{bonuses.FOOLED_MODEL_REASON} (a test)",
    )


def figures(study):
    return (
        study.slug,
        study.unpaid_count,
        study.unpaid_amount,
        study.held_count,
        study.held_amount,
        study.earned_amount,
        study.paid_amount,
    )


def test_each_summary_figure_counts_only_its_own_rows(make_worker):
    dataset = make_dataset()
    # Named so that the order by slug is not the order the studies were made in.
    later, first = make_study(dataset, slug="z-study"), make_study(dataset, slug="a-study")
    make_study(dataset, slug="m-study-without-bonuses")
    paying, holding, refused = (session_for(later, make_worker(), session_id=f"S{n}") for n in range(3))
    paid = earned(paying, "1.00")
    bonuses.mark_paid(later, [paid.pk])
    earned(paying, "2.00")  # payable, not paid yet
    earned(holding, "4.00")
    holds.hold(holding, "typist", "pasted, not typed")
    earned(refused, "8.00")
    holds.hold(refused, "typist", "pasted, not typed")
    refused.completed_at = refused.started_at  # only a completed session's hold is decided
    refused.save(update_fields=["completed_at"])
    assert holds.decide_code_holds([refused.pk], CodeHoldDecision.REFUSED) == 1
    earned(session_for(first, make_worker(), session_id="S9"), "16.00")
    # A study whose every bonus waits: nothing unpaid, 0 and not NULL.
    waiting = session_for(make_study(dataset, slug="h-study"), make_worker(), session_id="S8")
    earned(waiting, "32.00")
    holds.hold(waiting, "typist", "pasted, not typed")

    summaries = [figures(study) for study in bonuses.study_summaries()]

    assert summaries == [
        ("a-study", 1, Decimal("16.00"), 0, Decimal("0"), Decimal("16.00"), Decimal("0")),
        ("h-study", 0, Decimal("0"), 1, Decimal("32.00"), Decimal("32.00"), Decimal("0")),
        ("z-study", 1, Decimal("2.00"), 1, Decimal("4.00"), Decimal("15.00"), Decimal("1.00")),
    ]
