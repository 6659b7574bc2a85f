"""Catch trials in validation batches, their scoring, and the bonus ledger."""

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction

from corpus.models import Label, Market, Pair, ValidationLabel
from crowd.models import Study, StudySession, TaskKind
from quality import bonuses, catch_trials
from quality.models import BonusCause, BonusEntry, BonusKind, CatchTrialAnswer, LedgerIsAppendOnly
from quality.services import set_reference_label
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
from validation.models import ValidationClaim

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION

pytestmark = pytest.mark.django_db


def make_study(dataset, share=1.0, bonus="1.00", currency="USD", slug="val-study"):
    return Study.objects.create(
        slug=slug,
        name=slug,
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code="CODE",
        catch_trial_share=share,
        bonus_per_catch_match=Decimal(bonus),
        bonus_currency=currency,
    )


def session_for(study, worker, session_id="S1"):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=session_id)


def catch_pair(dataset, label=E):
    """A fully labelled pair a researcher marked as a catch trial."""
    pair = make_pair(dataset, label=label, needs_validation=False)
    set_reference_label(pair, label, is_catch_trial=True)
    return Pair.objects.get(pk=pair.pk)


def counters(pair):
    pair.refresh_from_db()
    return (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes, pair.gold_label)


def claims(batch):
    return list(ValidationClaim.objects.filter(batch=batch).order_by("id"))


def test_batches_carry_the_share_of_catch_trials_on_average():
    # Each of five places is a catch trial with the share's chance, one place kept ordinary.
    assert catch_trials.catch_trials_per_batch(0.01, 5) == pytest.approx(0.05)
    assert catch_trials.catch_trials_per_batch(0.0, 5) == 0
    assert catch_trials.catch_trials_per_batch(1.0, 5) == 4
    # A premise of three pairs opened gives twelve catch trials: opened once in 240 batches at 1%.
    assert catch_trials.opening_chance(0.05, 3) == pytest.approx(0.05 / 12)
    draws = iter([0.3, 0.7])
    assert [catch_trials.whole_draws(1.5, lambda: next(draws)) for _ in range(2)] == [2, 1]


def test_a_batch_mixes_in_a_catch_trial_that_looks_like_any_pair(make_worker):
    dataset = make_dataset()
    ordinary = [make_pair(dataset) for _ in range(6)]
    trap = catch_pair(dataset)
    worker = make_worker()
    study = make_study(dataset, share=1.0)
    batch = batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker))
    rows = claims(batch)
    assert len(rows) == 5
    # Share 1.0 still leaves one ordinary pair (never a batch of catch trials alone); one catch trial exists.
    assert [r.pair_id for r in rows if r.is_catch_trial] == [trap.pk]
    assert sum(not r.is_catch_trial for r in rows) == 4
    assert {r.pair_id for r in rows if not r.is_catch_trial} <= {p.pk for p in ordinary}


def test_no_catch_trials_outside_a_study_or_at_share_zero(make_worker):
    dataset = make_dataset()
    for _ in range(5):
        make_pair(dataset)
    catch_pair(dataset)
    worker = make_worker()
    assert not any(r.is_catch_trial for r in claims(batch_claims.claim_validation_batch(worker)))
    other = make_worker()
    study = make_study(dataset, share=0.0)
    batch = batch_claims.claim_validation_batch(other, study_session=session_for(study, other))
    assert not any(r.is_catch_trial for r in claims(batch))


def test_no_batch_of_catch_trials_alone(make_worker):
    dataset = make_dataset()
    catch_pair(dataset)
    worker = make_worker()
    study = make_study(dataset, share=1.0)
    assert batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker)) is None


def submit(worker, batch, answers):
    """Submit with `answers` {pair pk: label}; pairs not named get entailment."""
    labels = {r.pair_id: answers.get(r.pair_id, E) for r in claims(batch)}
    return services.submit_validation_batch(worker, batch, labels)


def test_a_matched_catch_trial_earns_one_bonus_and_leaves_the_pair_alone(make_worker):
    dataset = make_dataset()
    for _ in range(4):
        make_pair(dataset)
    trap = catch_pair(dataset, label=N)
    before = counters(trap)
    worker = make_worker(market=Market.PROLIFIC, external_id="PROLIFIC-1")
    study = make_study(dataset, share=1.0, bonus="1.00", currency="GBP")
    session = session_for(study, worker)
    batch = batch_claims.claim_validation_batch(worker, study_session=session)
    result = submit(worker, batch, {trap.pk: N})
    assert len(result.labels) == 4  # the ordinary pairs only
    assert counters(trap) == before
    assert not ValidationLabel.objects.filter(pair=trap, worker=worker).exists()
    answer = CatchTrialAnswer.objects.get(worker=worker)
    assert (answer.pair_id, answer.label, answer.expected, answer.matched) == (trap.pk, N, N, True)
    (entry,) = BonusEntry.objects.all()
    assert (entry.kind, entry.amount, entry.currency, entry.study_session_id, entry.pair_id) == (
        BonusKind.EARNED,
        Decimal("1.00"),
        "GBP",
        session.pk,
        trap.pk,
    )
    # The session counted the batch as usual.
    session.refresh_from_db()
    assert session.tasks_done == 1


def test_a_missed_catch_trial_is_scored_but_earns_nothing(make_worker):
    dataset = make_dataset()
    for _ in range(4):
        make_pair(dataset)
    trap = catch_pair(dataset, label=N)
    worker = make_worker()
    study = make_study(dataset)
    batch = batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker))
    submit(worker, batch, {trap.pk: C})
    answer = CatchTrialAnswer.objects.get(worker=worker)
    assert answer.matched is False and answer.expected == N
    assert not BonusEntry.objects.exists()


def test_a_catch_trial_is_never_served_to_the_same_worker_again(make_worker):
    dataset = make_dataset()
    for _ in range(12):
        make_pair(dataset)
    trap = catch_pair(dataset)
    worker = make_worker()
    study = make_study(dataset)
    session = session_for(study, worker)
    served = []
    while (batch := batch_claims.claim_validation_batch(worker, study_session=session)) is not None:
        served += [r.pair_id for r in claims(batch) if r.is_catch_trial]
        submit(worker, batch, {})
    assert served == [trap.pk]
    # A second session of the same worker (a new Prolific session) does not bring it back either.
    for _ in range(5):
        make_pair(dataset)
    batch = batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker, "S2"))
    assert not any(r.is_catch_trial for r in claims(batch))


def test_authors_and_labellers_of_a_catch_pair_are_not_served_it(make_worker):
    dataset = make_dataset()
    author = make_worker()
    for _ in range(5):
        make_pair(dataset)
    trap = make_pair(dataset, author=author, needs_validation=False)
    set_reference_label(trap, E, is_catch_trial=True)
    study = make_study(dataset)
    batch = batch_claims.claim_validation_batch(author, study_session=session_for(study, author))
    assert not any(r.is_catch_trial for r in claims(batch))


def test_a_catch_trial_claim_takes_no_place_on_the_pair(make_worker):
    """A catch pair one label short of five stays claimable while it is out as someone's catch trial."""
    from datetime import timedelta

    from django.utils import timezone

    from corpus.services import add_label
    from validation.selectors import claimable_pairs

    dataset = make_dataset()
    trap = make_pair(dataset, needs_validation=True)
    for _ in range(3):
        add_label(trap, E, worker=make_worker())
    set_reference_label(trap, E, is_catch_trial=True)
    holder = make_worker()
    ValidationClaim.objects.create(
        worker=holder, pair=trap, is_catch_trial=True, expires_at=timezone.now() + timedelta(minutes=20)
    )
    assert trap.pk in claimable_pairs(make_worker(), timezone.now())
    ValidationClaim.objects.filter(worker=holder).update(is_catch_trial=False)
    assert trap.pk not in claimable_pairs(make_worker(), timezone.now())


def test_a_pair_in_the_batch_is_not_also_its_catch_trial(make_worker):
    """A catch pair that still needs validation may come as an ordinary pair, never twice in one batch."""
    dataset = make_dataset()
    for _ in range(4):
        make_pair(dataset)
    trap = make_pair(dataset, needs_validation=True)
    set_reference_label(trap, E, is_catch_trial=True)
    worker = make_worker()
    study = make_study(dataset)
    batch = batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker))
    rows = claims(batch)
    assert len(rows) == 5 and len({r.pair_id for r in rows}) == 5


def test_the_ledger_refuses_a_second_bonus_for_the_same_catch_and_session(make_worker):
    dataset = make_dataset()
    trap = catch_pair(dataset)
    worker = make_worker()
    study = make_study(dataset)
    session = session_for(study, worker)
    fields = {
        "kind": BonusKind.EARNED,
        "worker": worker,
        "study": study,
        "study_session": session,
        "pair": trap,
        "amount": Decimal("1.00"),
        "currency": "USD",
        "cause": BonusCause.CATCH_TRIAL,
        "reason": "catch",
    }
    BonusEntry.objects.create(**fields)
    with pytest.raises(IntegrityError, match="one_bonus_per_worker_catch_session"), transaction.atomic():
        BonusEntry.objects.create(**fields)


def test_the_ledger_is_append_only(make_worker):
    dataset = make_dataset()
    trap = catch_pair(dataset)
    worker = make_worker()
    study = make_study(dataset)
    entry = BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study,
        study_session=session_for(study, worker),
        pair=trap,
        amount=Decimal("1.00"),
        currency="USD",
        cause=BonusCause.OTHER,
        reason="catch",
    )
    entry.amount = Decimal("100.00")
    with pytest.raises(LedgerIsAppendOnly):
        entry.save()
    with pytest.raises(LedgerIsAppendOnly):
        entry.delete()
    assert BonusEntry.objects.get().amount == Decimal("1.00")


def earn(study, worker, pair, session):
    return BonusEntry.objects.create(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study,
        study_session=session,
        pair=pair,
        amount=study.bonus_per_catch_match,
        currency=study.bonus_currency,
        cause=BonusCause.CATCH_TRIAL,
        reason="Catch trial matched",
    )


def test_paying_adds_rows_once_in_one_transaction(make_worker, researcher):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(3)]
    study = make_study(dataset, bonus="0.75")
    worker = make_worker(market=Market.PROLIFIC, external_id="P1")
    session = session_for(study, worker)
    earned = [earn(study, worker, trap, session) for trap in traps]
    outcome = bonuses.mark_paid(study, [e.pk for e in earned[:2]], by=researcher)
    assert outcome == {"paid": 2, "already_paid": 0, "amount": Decimal("1.50")}
    assert [e.pk for e in bonuses.unpaid(study)] == [earned[2].pk]
    # Paying the same again pays nothing twice.
    again = bonuses.mark_paid(study, [e.pk for e in earned], by=researcher)
    assert again == {"paid": 1, "already_paid": 2, "amount": Decimal("0.75")}
    assert BonusEntry.objects.filter(kind=BonusKind.PAID).count() == 3
    (totals,) = bonuses.worker_totals(study)
    assert (totals["earned"], totals["paid"], totals["unpaid"]) == (Decimal("2.25"), Decimal("2.25"), Decimal("0"))


def test_paying_a_foreign_id_refuses_everything(make_worker):
    dataset = make_dataset()
    trap = catch_pair(dataset)
    study, other = make_study(dataset), make_study(dataset, slug="other")
    worker = make_worker()
    mine = earn(study, worker, trap, session_for(study, worker))
    theirs = earn(other, worker, trap, session_for(other, worker))
    with pytest.raises(bonuses.PaymentRefused, match="nothing was marked paid"):
        bonuses.mark_paid(study, [mine.pk, theirs.pk])
    assert not BonusEntry.objects.filter(kind=BonusKind.PAID).exists()
    with pytest.raises(bonuses.PaymentRefused):
        bonuses.mark_paid(study, [])


def test_exports_are_what_the_markets_accept(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(3)]
    study = make_study(dataset, bonus="1.00", currency="GBP")
    prolific = make_worker(market=Market.PROLIFIC, external_id="5f1e2d3c4b5a697887766554")
    turker = make_worker(market=Market.MTURK, external_id="A1B2C3D4E5")
    local = make_worker()
    p_session = session_for(study, prolific, "SESSION-P")
    t_session = session_for(study, turker, "ASSIGN-1")
    earn(study, prolific, traps[0], p_session)
    earn(study, prolific, traps[1], p_session)
    earn(study, turker, traps[0], t_session)
    earn(study, local, traps[0], session_for(study, local, "L"))
    entries = list(bonuses.unpaid(study))
    assert bonuses.prolific_bulk_bonus_csv(entries) == "5f1e2d3c4b5a697887766554,2.00\n"
    assert bonuses.mturk_bonus_csv(entries) == (
        "worker_id,assignment_id,amount,reason\n"
        "A1B2C3D4E5,ASSIGN-1,1.00,Bonus for 1 catch trial answered as the researchers did\n"
    )


def test_the_database_refuses_to_edit_or_delete_ledger_rows(make_worker):
    """Past the model too (a queryset update, a raw DELETE): PostgreSQL's trigger refuses."""
    from django.db import DatabaseError

    dataset = make_dataset()
    study = make_study(dataset)
    worker = make_worker()
    entry = earn(study, worker, catch_pair(dataset), session_for(study, worker))
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        BonusEntry.objects.filter(pk=entry.pk).update(amount=Decimal("99.00"))
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        BonusEntry.objects.filter(pk=entry.pk).delete()
    assert BonusEntry.objects.get().amount == Decimal("1.00")
