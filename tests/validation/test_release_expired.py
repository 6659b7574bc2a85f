"""The beat schedule's release of expired claims (`validation.release_expired_claims`): validation
batches, per-premise (MPE §5.2) batches and grammaticality pages past their expiry are marked expired,
live ones kept, and the validation pairs' held places recounted so they come back into the claim index."""

import pytest
from django.conf import settings

from corpus.models import Dataset, Pair
from crowd.models import ClaimStatus
from tests import factories
from validation import batch_claims, premise_labels
from validation import grammaticality as grammar
from validation.models import GrammaticalityClaim, PremiseLabelClaim, ValidationClaim
from validation.tasks import release_expired

from .premise_helpers import make_items
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db

PAST = "2000-01-01T00:00:00Z"


def test_the_schedule_runs_the_release_task():
    entries = [entry for entry in settings.CELERY_BEAT_SCHEDULE.values() if entry["task"] == release_expired.name]
    assert len(entries) == 1
    schedule = entries[0]["schedule"]
    assert isinstance(schedule, int | float) and schedule > 0


def test_expired_claims_of_every_task_are_released_and_live_ones_kept(dataset, make_worker):
    pairs = [make_pair(dataset) for _ in range(2)]
    make_items(2)
    grammar_set = factories.dataset("gram-release")
    Dataset.objects.filter(pk=grammar_set.pk).update(grammaticality_judgments=2)
    factories.pair(grammar_set, factories.premise(grammar_set), ["neutral"])
    gone, staying = make_worker(), make_worker()
    for worker in (gone, staying):
        assert batch_claims.claim_validation_batch(worker, dataset=dataset) is not None
        assert premise_labels.claim_premise_batch(worker) is not None
        assert grammar.claim_page(worker, dataset=grammar_set) is not None
    for model in (ValidationClaim, PremiseLabelClaim, GrammaticalityClaim):
        model.objects.filter(worker=gone).update(expires_at=PAST)
    # What the last claim counted: both workers' places (the one-statement claim keeps it; SQLite's
    # path leaves the count alone), set here so the recount is seen on either database.
    Pair.objects.filter(pk__in=[pair.pk for pair in pairs]).update(held_places=2)

    released = release_expired.apply().get()

    assert released == {
        "validation": ValidationClaim.objects.filter(worker=gone).count(),
        "premise_labels": PremiseLabelClaim.objects.filter(worker=gone).count(),
        "grammaticality": GrammaticalityClaim.objects.filter(worker=gone).count(),
    }
    assert all(count > 0 for count in released.values())
    for model in (ValidationClaim, PremiseLabelClaim, GrammaticalityClaim):
        assert set(model.objects.filter(worker=gone).values_list("status", flat=True)) == {ClaimStatus.EXPIRED}
        assert set(model.objects.filter(worker=staying).values_list("status", flat=True)) == {ClaimStatus.OPEN}
    assert sorted(Pair.objects.filter(pk__in=[pair.pk for pair in pairs]).values_list("held_places", flat=True)) == [
        1,
        1,
    ]
    assert release_expired.apply().get() == {"validation": 0, "premise_labels": 0, "grammaticality": 0}
