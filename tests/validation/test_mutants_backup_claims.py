"""validation/backup_claims.py at the edges mutmut found unguarded: which workers have let a claim
of the study run out, which claims hold a pair's place against an arrival, which pairs an arrival
may take as backups and in what order, and how a backup batch is picked from them (one pair a
premise, three candidates locked a place)."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from corpus.models import LABELS_PER_PAIR, Label, Pair
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests import factories
from tests.present import present
from validation import batch_claims, holds
from validation.backup_claims import (
    backup_candidates,
    lapsed_workers,
    pick_backup_pairs,
    places_held_against_arrivals,
)
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db

CLAIM_PERIOD = timedelta(minutes=20)


def a_study(dataset, slug):
    return Study.objects.create(
        slug=slug,
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code=slug.upper(),
        catch_trial_share=0,
    )


@pytest.fixture
def dataset():
    return make_dataset("backup-edges")


@pytest.fixture
def study(dataset):
    return a_study(dataset, "backup-edges")


@pytest.fixture
def other_study(dataset):
    """A second study of the same pairs: its claims are not this study's."""
    return a_study(dataset, "backup-elsewhere")


def visit(study, worker):
    return StudySession.objects.get_or_create(study=study, worker=worker, external_session_id=f"S{worker.pk}")[0]


def claimed(pair, worker, study, *, status=ClaimStatus.OPEN, expires_in=timedelta(minutes=10), age=None, **fields):
    """A claim row as the claim, the submit, the expiry or a take-back leave it; `age` moves its
    claim time back."""
    now = timezone.now()
    row = ValidationClaim.objects.create(
        pair=pair,
        worker=worker,
        study_session=visit(study, worker),
        status=status,
        expires_at=now + expires_in,
        **fields,
    )
    if age is not None:
        ValidationClaim.objects.filter(pk=row.pk).update(created_at=now - age)
    return row


def with_labels(pair, count):
    Pair.objects.filter(pk=pair.pk).update(label_count=count)
    return pair


def lapsed(study):
    return {row["worker_id"] for row in lapsed_workers(study.pk, timezone.now())}


def test_a_worker_has_lapsed_by_an_expired_a_taken_back_or_an_overdue_claim_of_this_study_only(
    dataset, study, other_study, make_worker
):
    pair = make_pair(dataset)
    expired, taken_back, overdue, live, sent, elsewhere = (make_worker() for _ in range(6))
    claimed(pair, expired, study, status=ClaimStatus.EXPIRED, expires_in=-timedelta(minutes=1))
    claimed(pair, taken_back, study, take_backs=1)  # taken back after it ran out: live again
    claimed(pair, overdue, study, expires_in=-timedelta(seconds=1))  # ran out, not yet marked
    claimed(pair, live, study)
    claimed(pair, sent, study, status=ClaimStatus.SUBMITTED, expires_in=-timedelta(minutes=1))  # sent in time
    claimed(pair, elsewhere, other_study, status=ClaimStatus.EXPIRED, expires_in=-timedelta(minutes=1))

    assert lapsed(study) == {expired.pk, taken_back.pk, overdue.pk}
    assert lapsed(other_study) == {elsewhere.pk}


def test_a_place_is_held_only_by_a_fresh_live_ordinary_claim_of_a_worker_who_never_lapsed(
    dataset, study, other_study, make_worker
):
    busy, free = make_pair(dataset), make_pair(dataset)
    holder, sent, catch, late_elsewhere, stale, lapsing = (make_worker() for _ in range(6))
    claimed(busy, holder, study)
    claimed(busy, sent, study, status=ClaimStatus.SUBMITTED)
    claimed(busy, catch, study, is_catch_trial=True)
    claimed(busy, late_elsewhere, other_study, expires_in=-timedelta(seconds=1))  # lapsed there, not here
    claimed(busy, stale, study, age=CLAIM_PERIOD + timedelta(minutes=1))
    claimed(busy, lapsing, study)
    claimed(free, lapsing, study, status=ClaimStatus.EXPIRED, expires_in=-timedelta(minutes=1))

    held = dict(
        Pair.objects.annotate(held=places_held_against_arrivals(study.pk, timezone.now())).values_list("pk", "held")
    )

    assert held == {busy.pk: 1, free.pk: 0}


def test_backups_are_pairs_needing_labels_with_a_live_ordinary_claim_of_the_study_never_the_arrivals(
    dataset, study, other_study, make_worker
):
    arrival, holder, other, sender, late, catch = (make_worker() for _ in range(6))
    session = visit(study, arrival)
    good, _unclaimed, elsewhere, sent_only, overdue_only, catch_only, full, mine = (
        with_labels(make_pair(dataset), LABELS_PER_PAIR - 1) for _ in range(8)
    )
    done = make_pair(dataset, needs_validation=False)
    claimed(good, holder, study)
    claimed(elsewhere, other, other_study)
    claimed(sent_only, sender, study, status=ClaimStatus.SUBMITTED)
    claimed(overdue_only, late, study, expires_in=-timedelta(seconds=1))
    claimed(catch_only, catch, study, is_catch_trial=True)
    claimed(done, holder, study)
    with_labels(full, LABELS_PER_PAIR)
    claimed(full, holder, study, age=CLAIM_PERIOD + timedelta(minutes=1))  # holds no place: one more would fit
    claimed(mine, holder, study)
    claimed(mine, arrival, study, status=ClaimStatus.EXPIRED, expires_in=-timedelta(minutes=1))

    assert list(backup_candidates(arrival, session, timezone.now())) == [good]


def test_backups_come_closest_to_complete_first_then_by_their_oldest_live_ordinary_claim(dataset, study, make_worker):
    arrival, first, second, third, sender, late, catch = (make_worker() for _ in range(7))
    session = visit(study, arrival)
    newer, older = with_labels(make_pair(dataset), 2), with_labels(make_pair(dataset), 2)
    nearly = with_labels(make_pair(dataset), 3)
    claimed(nearly, first, study)
    claimed(newer, second, study, age=timedelta(minutes=1))
    claimed(older, third, study, age=timedelta(minutes=10))
    # Earlier claims on the newer pair that are not live ordinary ones: they date nothing.
    claimed(newer, sender, study, status=ClaimStatus.SUBMITTED, age=timedelta(hours=2))
    claimed(newer, late, study, expires_in=-timedelta(seconds=1), age=timedelta(hours=2))
    claimed(newer, catch, study, is_catch_trial=True, age=timedelta(hours=2))

    assert list(backup_candidates(arrival, session, timezone.now())) == [nearly, older, newer]


def test_a_backup_batch_takes_one_pair_a_premise_and_locks_three_candidates_a_place(dataset, study, make_worker):
    arrival, holder = make_worker(), make_worker()
    session = visit(study, arrival)
    shared = factories.premise(dataset, factories.genre("fiction"))
    twins = [with_labels(make_pair(dataset, premise=shared, label=Label.NEUTRAL), 3) for _ in range(2)]
    alone = with_labels(make_pair(dataset), 2)
    rest = [with_labels(make_pair(dataset), 1) for _ in range(5)]
    for age, pair in enumerate([*twins, alone, *rest]):
        claimed(pair, holder, study, age=timedelta(minutes=10 - age))

    with transaction.atomic():
        chosen, locked = pick_backup_pairs(arrival, session, timezone.now(), size=2)

    assert chosen == {twins[0].pk: shared.pk, alone.pk: alone.premise_id}
    assert locked == [pair.pk for pair in [*twins, alone, *rest][:6]]


def test_a_taken_back_claim_closes_no_place_so_two_arrivals_find_its_pairs(dataset, study, make_worker):
    """The id took its batch back after it ran out: its claims are live and fresh but hold nothing,
    so the pairs' last place and the backup place go to two arrivals, and a third finds none."""
    for _ in range(3):
        with_labels(make_pair(dataset), LABELS_PER_PAIR - 1)
    holder = make_worker()
    batch = present(batch_claims.claim_validation_batch(holder, study_session=visit(study, holder)))
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert present(holds.renew_batch(holder, batch, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.TAKEN_BACK
    pairs = set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))

    for _ in range(2):
        arrival = make_worker()
        backup = present(batch_claims.claim_validation_batch(arrival, study_session=visit(study, arrival)))
        assert set(ValidationClaim.objects.filter(batch=backup).values_list("pair_id", flat=True)) == pairs
    third = make_worker()
    assert batch_claims.claim_validation_batch(third, study_session=visit(study, third)) is None
