"""The bonus page's "mark paid" (quality.bonuses.mark_paid) at its edges: nothing chosen, an id that
is not an earned bonus of this study (a paid row's id included: a payment is never paid again), an
open-link study, a held session's bonus; each refusal says what happened in its own words and
writes nothing. What it writes: one paid row per earned bonus not paid yet, carrying its worker,
session, pair, amount and currency, its reason marked paid, who recorded it; one audit entry for
the lot; and an answer that counts the paid, the already paid and the amount."""

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from corpus.models import Worker
from crowd import holds
from crowd.models import Study, StudySession
from quality import bonuses
from quality.models import BonusCause, BonusEntry, BonusKind
from tests.quality.test_catch_trials import make_study, session_for
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


@pytest.fixture
def earned(make_worker: Any) -> tuple[Study, StudySession, list[BonusEntry]]:
    dataset = make_dataset()
    study = make_study(dataset, currency="GBP")
    worker: Worker = make_worker()
    session = session_for(study, worker)
    rows = [
        BonusEntry.objects.create(
            kind=BonusKind.EARNED,
            worker=worker,
            study=study,
            study_session=session,
            pair=make_pair(dataset),
            amount=Decimal(amount),
            currency="GBP",
            cause=BonusCause.OTHER,
            reason=f"catch trial {n}",
        )
        for n, amount in enumerate(["0.50", "1.25"])
    ]
    return study, session, rows


def refusal(study: Study, ids: list[int], **kwargs: Any) -> str:
    before = BonusEntry.objects.count()
    with pytest.raises(bonuses.PaymentRefused) as refused:
        bonuses.mark_paid(study, ids, **kwargs)
    assert BonusEntry.objects.count() == before, "a refusal writes nothing"
    return str(refused.value)


def test_nothing_chosen_is_refused_in_words(earned: tuple[Study, StudySession, list[BonusEntry]]) -> None:
    study, _, _ = earned
    assert refusal(study, []) == "Choose at least one bonus to mark as paid."


def test_a_paid_rows_id_is_not_an_earned_bonus_and_is_never_paid_again(
    earned: tuple[Study, StudySession, list[BonusEntry]],
) -> None:
    study, _, rows = earned
    bonuses.mark_paid(study, [rows[0].pk])
    paid_row = BonusEntry.objects.get(kind=BonusKind.PAID, pays=rows[0])

    message = refusal(study, [paid_row.pk])

    assert message == "Some of these are not earned bonuses of this study; nothing was marked paid."
    assert not BonusEntry.objects.filter(pays=paid_row).exists()


def test_an_open_link_studys_bonuses_are_refused_in_words(
    earned: tuple[Study, StudySession, list[BonusEntry]],
) -> None:
    study, _, rows = earned
    Study.objects.filter(pk=study.pk).update(open_link_unverified=True)
    study.refresh_from_db()

    assert refusal(study, [row.pk for row in rows]) == (
        "This study's link is open (its participant ids are unverified), so its bonuses are never paid: "
        "nothing was marked paid."
    )


def test_a_held_sessions_bonuses_are_counted_in_the_refusal(
    earned: tuple[Study, StudySession, list[BonusEntry]],
) -> None:
    study, session, rows = earned
    holds.hold(session, "typist", "pasted, not typed")

    assert refusal(study, [row.pk for row in rows]) == (
        "2 of these bonus(es) belong to sessions whose completion code is held or was refused: "
        "nothing was marked paid. Release the hold first (admin: study sessions)."
    )


def test_each_earned_bonus_is_paid_once_with_what_it_earned_and_the_lot_is_audited(
    earned: tuple[Study, StudySession, list[BonusEntry]], django_user_model: type[User]
) -> None:
    study, session, rows = earned
    payer = django_user_model.objects.create_user(username="payer")
    bonuses.mark_paid(study, [rows[0].pk], by=payer)

    answer = bonuses.mark_paid(study, [str(rows[1].pk), rows[0].pk, rows[1].pk], by=payer)

    assert answer == {"paid": 1, "already_paid": 1, "amount": Decimal("1.25")}
    paid = BonusEntry.objects.get(kind=BonusKind.PAID, pays=rows[1])
    assert (paid.worker_id, paid.study_id, paid.study_session_id, paid.pair_id) == (
        rows[1].worker_id,
        study.pk,
        session.pk,
        rows[1].pair_id,
    )
    assert (paid.amount, paid.currency, paid.reason, paid.recorded_by) == (
        Decimal("1.25"),
        "GBP",
        f"{bonuses.PAID_PREFIX}catch trial 1",
        payer,
    )
    entries = AuditEntry.objects.filter(action="payment.marked_paid").order_by("pk")
    assert entries.count() == 2
    last = entries.last()
    assert last is not None and last.actor == "payer" and last.team_id == study.team_id
    assert (last.subject_type, last.subject_id) == ("crowd.study", str(study.pk))
    assert last.after == {"bonuses": [rows[1].pk], "amount": "1.25", "currency": "GBP"}


def test_paying_nothing_new_writes_no_audit_entry(earned: tuple[Study, StudySession, list[BonusEntry]]) -> None:
    study, _, rows = earned
    bonuses.mark_paid(study, [rows[0].pk])
    assert AuditEntry.objects.filter(action="payment.marked_paid").count() == 1

    answer = bonuses.mark_paid(study, [rows[0].pk])

    assert answer == {"paid": 0, "already_paid": 1, "amount": Decimal("0")}
    assert AuditEntry.objects.filter(action="payment.marked_paid").count() == 1


def test_the_market_confirming_a_payment_pays_a_held_session_and_says_so(
    earned: tuple[Study, StudySession, list[BonusEntry]],
) -> None:
    study, session, rows = earned
    holds.hold(session, "typist", "pasted, not typed")

    answer = bonuses.mark_paid(study, [rows[0].pk], confirmed_by_market=True)

    assert answer == {"paid": 1, "already_paid": 0, "amount": Decimal("0.50")}
    assert AuditEntry.objects.filter(action="payment.confirmed_by_market").count() == 1
    assert not AuditEntry.objects.filter(action="payment.marked_paid").exists()


def test_a_long_reason_is_cut_to_the_ledgers_width_when_paid(
    earned: tuple[Study, StudySession, list[BonusEntry]],
) -> None:
    study, session, rows = earned
    long = BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker_id=rows[0].worker_id,
        study=study,
        study_session=session,
        pair=make_pair(study.dataset),
        amount=Decimal("0.10"),
        currency="GBP",
        cause=BonusCause.OTHER,
        reason="r" * 200,
    )

    bonuses.mark_paid(study, [long.pk])

    reason = BonusEntry.objects.get(pays=long).reason
    assert reason == (bonuses.PAID_PREFIX + "r" * 200)[:200] and len(reason) == 200
