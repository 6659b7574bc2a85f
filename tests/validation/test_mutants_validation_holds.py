"""Renewing a validation batch's hold at its edges: the end it reports is the batch's earliest, a pair
with exactly one place left still lets an expired batch come back, a catch trial's pair is not asked
for room, and a batch taken back is counted again in its pairs' held places (a renewal that keeps
the hold as it was writes no pair); a batch of one pair renews like any other (and is gone for an
excluded worker); the worker is never among those waiting for their own batch; a batch's hold lasts
the study's own claim minutes when it sets them, else the server's."""

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import Label, Pair, Worker
from crowd.holds import HoldRenewal, record_no_task
from crowd.models import ClaimStatus
from tests import factories
from tests.present import present
from validation import batch_claims, holds, premise_labels
from validation.models import PREMISE_LABELS_PER_PAIR, PremiseLabelClaim, PremisePair, ValidationClaim

from .premise_helpers import make_items
from .test_mutants_batch_claims import a_study, visit
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db


def claims_of(batch: Any) -> list[ValidationClaim]:
    return list(ValidationClaim.objects.filter(batch=batch).order_by("id"))


def expire(batch: Any) -> None:
    ValidationClaim.objects.filter(batch=batch).update(
        expires_at=timezone.now() - timedelta(minutes=1), status=ClaimStatus.EXPIRED
    )


@pytest.fixture
def claimed(dataset: Any, make_worker: Any) -> tuple[Worker, Any]:
    for _ in range(6):
        make_pair(dataset, label=Label.NEUTRAL)
    worker = make_worker()
    return worker, batch_claims.claim_validation_batch(worker)


def renew(worker: Worker, batch: Any) -> holds.Renewed:
    return present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))


def test_an_untouched_hold_reports_the_batchs_earliest_end(claimed: tuple[Worker, Any]) -> None:
    worker, batch = claimed
    claims = claims_of(batch)
    assert len(claims) >= 3
    now = timezone.now()
    # The latest-made claim ends first, so neither the first row nor the second-earliest end is it.
    for index, claim in enumerate(claims):
        ValidationClaim.objects.filter(pk=claim.pk).update(expires_at=now + timedelta(minutes=15, seconds=-30 * index))
    renewed = renew(worker, batch)
    assert renewed.outcome is HoldRenewal.UNCHANGED
    assert renewed.expires_at == now + timedelta(minutes=15, seconds=-30 * (len(claims) - 1))


def test_an_expired_batch_comes_back_when_each_pair_has_one_place_left(claimed: tuple[Worker, Any]) -> None:
    worker, batch = claimed
    expire(batch)
    pairs = [claim.pair_id for claim in claims_of(batch)]
    Pair.objects.filter(pk__in=pairs).update(label_count=4)
    assert renew(worker, batch).outcome is HoldRenewal.TAKEN_BACK
    assert all(claim.status == ClaimStatus.OPEN for claim in claims_of(batch))


def test_a_full_pair_under_a_catch_trial_does_not_keep_the_batch_out(claimed: tuple[Worker, Any]) -> None:
    worker, batch = claimed
    expire(batch)
    catch = claims_of(batch)[0]
    ValidationClaim.objects.filter(pk=catch.pk).update(is_catch_trial=True)
    Pair.objects.filter(pk=catch.pair_id).update(label_count=5)
    assert renew(worker, batch).outcome is HoldRenewal.TAKEN_BACK


def test_a_batch_taken_back_is_counted_again_in_its_pairs_held_places(
    claimed: tuple[Worker, Any], make_worker: Any
) -> None:
    worker, batch = claimed
    expire(batch)
    pairs = [claim.pair_id for claim in claims_of(batch)]
    # As the expiry sweep leaves them: no place held, except another validator's live claim on one.
    Pair.objects.filter(pk__in=pairs).update(held_places=0)
    ValidationClaim.objects.create(
        worker=make_worker(), pair_id=pairs[0], expires_at=timezone.now() + timedelta(minutes=10)
    )
    assert renew(worker, batch).outcome is HoldRenewal.TAKEN_BACK
    held = dict(Pair.objects.filter(pk__in=pairs).values_list("pk", "held_places"))
    assert held == {pk: 2 if pk == pairs[0] else 1 for pk in pairs}


def test_a_batchs_hold_lasts_the_studys_own_minutes_else_the_servers(dataset: Any, settings: Any) -> None:
    settings.NLI = {**settings.NLI, batch_claims.VALIDATION_CLAIMS.minutes_setting: 17}
    study = a_study(dataset, "own-minutes")
    assert holds.claim_minutes() == 17
    assert holds.claim_minutes(study) == 17
    study.claim_minutes = 7
    study.save(update_fields=["claim_minutes"])
    assert holds.claim_minutes(study) == 7


def test_a_batch_of_one_pair_is_renewed(dataset: Any, make_worker: Any) -> None:
    # The last pair the dataset has to offer makes a batch of one; its hold renews like any other.
    make_pair(dataset, label=Label.NEUTRAL)
    worker = make_worker()
    batch = batch_claims.claim_validation_batch(worker)
    (only,) = claims_of(batch)
    renewed = renew(worker, batch)
    assert renewed.outcome is HoldRenewal.UNCHANGED
    assert renewed.expires_at == only.expires_at


def test_an_excluded_worker_gets_a_batch_of_one_pair_gone(dataset: Any, make_worker: Any) -> None:
    make_pair(dataset, label=Label.NEUTRAL)
    worker = make_worker()
    batch = batch_claims.claim_validation_batch(worker)
    factories.exclude(worker)
    assert renew(worker, batch).outcome is HoldRenewal.GONE


def test_a_worker_told_no_task_earlier_does_not_wait_for_their_own_batch(dataset: Any, make_worker: Any) -> None:
    # Others waiting for work keep an expired batch out; the worker whose batch it is is not one of
    # them, even when their own visit was told "no task" within the claim period.
    for _ in range(3):
        make_pair(dataset, label=Label.NEUTRAL)
    worker = make_worker()
    session = visit(a_study(dataset, "own-wait"), worker)
    batch = batch_claims.claim_validation_batch(worker, study_session=session)
    record_no_task(session)
    expire(batch)
    assert renew(worker, batch).outcome is HoldRenewal.TAKEN_BACK
    assert all(claim.status == ClaimStatus.OPEN for claim in claims_of(batch))


def test_a_renewal_that_keeps_the_hold_as_it_was_writes_no_pair(claimed: tuple[Worker, Any]) -> None:
    # Only a batch taken back recounts its pairs' held places; a heartbeat that changes nothing
    # leaves the pair rows (which every claim locks) unwritten.
    worker, batch = claimed
    with CaptureQueriesContext(connection) as queries:
        assert renew(worker, batch).outcome is HoldRenewal.UNCHANGED
    pair_table = Pair._meta.db_table
    assert not [q["sql"] for q in queries.captured_queries if q["sql"].startswith(f'UPDATE "{pair_table}"')]


def test_an_expired_premise_batch_whose_premise_filled_up_does_not_come_back(make_worker: Any) -> None:
    # Premise-label claims have no catch trials: every one of them asks its premise pair for room.
    make_items(3)
    worker = make_worker()
    batch = present(premise_labels.claim_premise_batch(worker))
    claims = PremiseLabelClaim.objects.filter(batch=batch)
    claims.update(expires_at=timezone.now() - timedelta(seconds=1), status=ClaimStatus.EXPIRED)
    taken = claims.order_by("id")[0].premise_pair_id
    PremisePair.objects.filter(pk=taken).update(label_count=PREMISE_LABELS_PER_PAIR)
    renewed = present(holds.renew_batch(worker, batch, premise_labels.PREMISE_CLAIMS))
    assert renewed.outcome is HoldRenewal.TAKEN
    assert all(claim.status == ClaimStatus.EXPIRED for claim in claims)


def test_an_expired_premise_batch_with_room_comes_back(make_worker: Any) -> None:
    make_items(3)
    worker = make_worker()
    batch = present(premise_labels.claim_premise_batch(worker))
    claims = PremiseLabelClaim.objects.filter(batch=batch)
    claims.update(expires_at=timezone.now() - timedelta(seconds=1), status=ClaimStatus.EXPIRED)
    taken = claims.order_by("id")[0].premise_pair_id
    PremisePair.objects.filter(pk=taken).update(label_count=PREMISE_LABELS_PER_PAIR - 1)
    assert present(holds.renew_batch(worker, batch, premise_labels.PREMISE_CLAIMS)).outcome is HoldRenewal.TAKEN_BACK
    assert all(claim.status == ClaimStatus.OPEN for claim in claims)
