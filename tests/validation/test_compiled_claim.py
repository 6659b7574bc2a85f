"""A claim's first look runs its candidate statement compiled once per shape
(`validation.services.LOCK_CLAIMABLE`, annotation_site.compiled_queries): it must lock exactly the
pairs, in the order, that the claim rule's queryset (`selectors.claimable_pairs`) locks, whoever
asks, for one dataset or all, whatever the time."""

from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.counters import add_label
from corpus.models import ItemKind, Label, PremiseStatus
from validation import services
from validation.claiming import lock_candidates
from validation.models import ValidationClaim, ValidationPolicy

from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def test_the_compiled_first_look_locks_what_the_claim_rule_locks(make_worker):
    open_data, trusted_data = make_dataset("open"), make_dataset("trusted-only")
    ValidationPolicy.objects.create(dataset=trusted_data, trusted_only=True)
    author, labeller, claimer = make_worker(), make_worker(), make_worker()
    trusted = make_worker(is_trusted=True)
    pairs = [make_pair(open_data, author=author if n % 4 == 0 else None) for n in range(12)]
    pairs += [make_pair(trusted_data) for _ in range(4)]
    add_label(pairs[1], Label.NEUTRAL, worker=labeller)
    add_label(pairs[2], Label.NEUTRAL)  # closer to complete: offered first
    held = pairs[3].premise
    held.status = PremiseStatus.HELD
    held.save()
    now = timezone.now()
    ValidationClaim.objects.create(
        pair=pairs[5], worker=claimer, batch="0" * 32, expires_at=now + timedelta(minutes=30)
    )
    for number in range(4):  # a pair four live claims fill, until they expire
        ValidationClaim.objects.create(
            pair=pairs[6], worker=make_worker(), batch=f"{number + 1:032d}", expires_at=now + timedelta(minutes=5)
        )

    looked = 0
    for worker in (author, labeller, claimer, trusted, make_worker()):
        for dataset in (None, open_data, trusted_data):
            for when in (now, now + timedelta(minutes=10)):
                compiled = services._claimable_locker(worker, when, dataset, ItemKind.SINGLE_PREMISE)(15, [])
                by_rule = lock_candidates(services._claimable(worker, when, dataset, ItemKind.SINGLE_PREMISE), 15)
                assert compiled == by_rule, (worker, dataset, when)
                looked += bool(by_rule)
    assert looked >= 12  # most askers have pairs to look at, so the comparison compares something
    # The multi-premise task's shape binds the same way (no items here: nothing to offer).
    assert services._claimable_locker(trusted, now, None, ItemKind.MULTI_PREMISE)(15, []) == []
