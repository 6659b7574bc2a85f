"""An excluded worker's open claims are released at once, whichever door excluded them: the admin's
action or the dashboard's workers page. Both call `quality.services.set_excluded`."""

import pytest
from django.urls import reverse

from corpus.models import Pair
from crowd.models import ClaimStatus
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def worker_holding_every_pair(make_worker):
    """A validator with an open claim on each of five pairs marked for validation, and a second
    validator who is refused while those pairs are held four times over."""
    dataset = make_dataset()
    pairs = [make_pair(dataset) for _ in range(5)]
    services.mark_for_validation(Pair.objects.filter(pk__in=[pair.pk for pair in pairs]))
    holders = [make_worker() for _ in range(4)]
    for holder in holders:
        assert batch_claims.claim_validation_batch(holder) is not None
    waiting = make_worker()
    assert batch_claims.claim_validation_batch(waiting) is None
    return holders[0], waiting


def exclude_through_the_admin(client, worker):
    return client.post(
        reverse("admin:corpus_worker_changelist"),
        {"action": "exclude_workers", "_selected_action": [worker.pk]},
        follow=True,
    )


def exclude_through_the_dashboard(client, worker):
    return client.post(
        reverse("dashboard:worker_exclusion"), {"action": "exclude", "worker": [worker.pk], "reason": "guessing"}
    )


@pytest.mark.parametrize("door", [exclude_through_the_admin, exclude_through_the_dashboard])
def test_an_excluded_workers_claims_are_released_by_either_door(door, client, researcher, make_worker):
    cheat, waiting = worker_holding_every_pair(make_worker)
    client.force_login(researcher)

    door(client, cheat)

    assert cheat.exclusions.exists()
    assert not ValidationClaim.objects.filter(worker=cheat, status=ClaimStatus.OPEN).exists()
    assert batch_claims.claim_validation_batch(waiting) is not None  # the released pairs are claimable again
