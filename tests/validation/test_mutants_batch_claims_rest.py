"""validation/batch_claims.py beyond the claim's own steps: a claim's first look offers only premises
the worker was never served, it locks no pair that live claims fill, it marks the worker's own
expired claims, a backup batch's claims carry the arrival's session, the served counts of a batch
count its catch trials, the recount of held places reaches a pair marked with one place, and an MPE
claim outside a study takes one dataset at a time, passing over a dataset closed to the worker."""

import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from corpus.models import LABELS_PER_PAIR, Pair
from crowd.models import ClaimStatus, Study, StudySession
from tests import factories
from tests.present import present
from validation import batch_claims, selectors
from validation.models import ValidationClaim, ValidationPolicy

from .test_mpe_task import make_mpe_items
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db


def a_study(dataset, slug, *, catch_trial_share=0.0):
    return Study.objects.create(
        slug=slug,
        name="Validate sentence pairs",
        dataset=dataset,
        tasks_per_batch=10,
        completion_code=slug.upper(),
        catch_trial_share=catch_trial_share,
    )


def visit(study, worker):
    return StudySession.objects.get_or_create(study=study, worker=worker, external_session_id=f"S{worker.pk}")[0]


def claimed(pair, worker, *, status=ClaimStatus.OPEN, expires_in=timedelta(minutes=10)):
    return ValidationClaim.objects.create(
        pair=pair, worker=worker, status=status, batch=uuid.uuid4(), expires_at=timezone.now() + expires_in
    )


def pairs_of(batch):
    return set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))


def test_a_claims_first_look_offers_only_premises_the_worker_was_never_served(dataset, make_worker):
    seen_premise = factories.premise(dataset)
    seen, twin = make_pair(dataset, premise=seen_premise), make_pair(dataset, premise=seen_premise)
    Pair.objects.filter(pk=twin.pk).update(label_count=3)  # closest to complete: first but for its premise
    fresh = make_pair(dataset)
    worker = make_worker()
    claimed(seen, worker, status=ClaimStatus.SUBMITTED)

    batch = present(batch_claims.claim_validation_batch(worker, dataset=dataset))

    assert pairs_of(batch) == {fresh.pk}


def test_a_claim_never_locks_a_pair_that_live_claims_fill_whatever_its_last_count_of_held_places(dataset, make_worker):
    """A locked candidate's held places are recounted after the claim; a pair its live claims fill
    is no candidate, so its (stale) count is left to the recount that runs when no pair is free."""
    filled, free = make_pair(dataset), make_pair(dataset)
    Pair.objects.filter(pk=filled.pk).update(label_count=LABELS_PER_PAIR - 2, held_places=0)
    claimed(filled, make_worker())
    claimed(filled, make_worker())

    batch = present(batch_claims.claim_validation_batch(make_worker(), dataset=dataset))

    assert pairs_of(batch) == {free.pk}
    filled.refresh_from_db()
    assert filled.held_places == 0


def test_a_claim_marks_the_workers_own_claims_that_ran_out_as_expired(dataset, make_worker):
    worker = make_worker()
    ran_out = claimed(make_pair(dataset), worker, expires_in=-timedelta(seconds=1))
    make_pair(dataset)

    present(batch_claims.claim_validation_batch(worker, dataset=dataset))

    ran_out.refresh_from_db()
    assert ran_out.status == ClaimStatus.EXPIRED


def test_a_backup_batchs_claims_carry_the_arrivals_study_session(dataset, make_worker):
    study = a_study(dataset, "backup-session")
    make_pair(dataset)
    Pair.objects.update(label_count=LABELS_PER_PAIR - 1)
    holder = make_worker()
    present(batch_claims.claim_validation_batch(holder, study_session=visit(study, holder)))
    arrival = make_worker()
    session = visit(study, arrival)

    backup = present(batch_claims.claim_validation_batch(arrival, study_session=session))

    assert set(ValidationClaim.objects.filter(batch=backup).values_list("study_session_id", flat=True)) == {session.pk}


def test_a_batchs_served_count_counts_each_of_its_catch_trials_once(dataset, make_worker):
    study = a_study(dataset, "served-catch", catch_trial_share=0.2)
    worker = make_worker()
    pairs = [make_pair(dataset).pk for _ in range(3)]
    items = [(pairs[0], {"is_catch_trial": True}), (pairs[1], {"is_catch_trial": False}), (pairs[2], {})]

    with transaction.atomic():
        batch_claims._insert_batch(worker, timezone.now(), items, visit(study, worker))

    assert selectors.study_served(study.pk) == (1, 1)


def test_the_recount_when_no_pair_is_free_reaches_a_pair_marked_with_one_held_place(dataset):
    released = make_pair(dataset)
    Pair.objects.filter(pk=released.pk).update(held_places=1)  # its one claim was released

    with transaction.atomic():
        assert batch_claims._recount_every_held_pair(timezone.now()) == 1

    released.refresh_from_db()
    assert released.held_places == 0


def test_an_mpe_claim_outside_a_study_takes_its_items_from_one_dataset_at_a_time(make_worker):
    _, first_items = make_mpe_items(2, slug="mpe-first")
    make_mpe_items(2, slug="mpe-second")

    batch = present(batch_claims.claim_mpe_batch(make_worker()))

    assert pairs_of(batch) == {item.pk for item in first_items}


def test_an_mpe_claim_passes_over_a_dataset_open_to_trusted_workers_only_to_the_next(make_worker):
    closed, _ = make_mpe_items(2, slug="mpe-trusted")
    ValidationPolicy.objects.create(dataset=closed, trusted_only=True)
    _, open_items = make_mpe_items(2, slug="mpe-open")

    batch = present(batch_claims.claim_mpe_batch(make_worker()))

    assert pairs_of(batch) == {item.pk for item in open_items}
