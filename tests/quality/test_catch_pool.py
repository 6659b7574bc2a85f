"""A catch pair is served to at most four participants; a dry pool serves no catch
trial (never a repeat) and the researchers' bonus page says so (docs/quality.md)."""

import pytest
from django.urls import reverse

from quality.catch_trials import MAX_SERVINGS
from tests.present import present
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def test_a_catch_pair_is_served_four_times_at_most_and_a_dry_pool_serves_none(client, make_worker, researcher):
    dataset = make_dataset()
    for _ in range(60):
        make_pair(dataset)
    traps = [catch_pair(dataset), catch_pair(dataset)]
    study = make_study(dataset, share=1.0)
    for number in range(12):
        worker = make_worker()
        batch_claims.claim_validation_batch(worker, study_session=session_for(study, worker, f"S{number}"))
    served = {trap.pk: ValidationClaim.objects.filter(pair=trap).count() for trap in traps}
    assert MAX_SERVINGS == 4 and served == {trap.pk: 4 for trap in traps}
    # The pool is dry: later batches are ordinary pairs only.
    late = make_worker()
    batch = present(batch_claims.claim_validation_batch(late, study_session=session_for(study, late, "late")))
    assert not ValidationClaim.objects.filter(batch=batch, is_catch_trial=True).exists()
    client.force_login(researcher)
    page = client.get(reverse("dashboard:bonuses")).content.decode()
    assert 'data-pool="dry"' in page and "batches carry no catch trials" in page


def test_a_study_with_no_catch_pair_marked_is_not_called_used_up(client, researcher):
    dataset = make_dataset()
    make_pair(dataset)
    make_study(dataset, share=0.2)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:bonuses")).content.decode()
    assert 'data-pool="unmarked"' in page and "no pair marked as a catch trial" in page
    assert 'data-pool="dry"' not in page and "used up" not in page
