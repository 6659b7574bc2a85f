"""The collection page counts the live writing and validation claims of the dataset and split asked
for: open and unexpired only, one per claim (several claims on one premise count each)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from collection import writing_claims
from collection.models import WritingClaim
from corpus.scope import Scope
from dashboard.queries.collection import _collection_overview
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present
from tests.validation.validation_factories import make_pair
from validation import batch_claims
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def test_live_claims_are_counted_per_dataset_and_split(make_worker):
    dataset, genre = writing_setup(writings_per_premise=2)
    other, _ = writing_setup(slug="other-collection")
    (shared,) = add_premises(dataset, genre, 1, split="dev")
    add_premises(other, genre, 2, start=50)
    for _ in range(2):  # two live claims on one premise: two claims
        assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise == shared
    writing_claims.claim_next_premise(make_worker(), dataset=other)
    ran_out = present(writing_claims.claim_next_premise(make_worker(), dataset=other))
    WritingClaim.objects.filter(pk=ran_out.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    for _ in range(2):
        make_pair(other)
    batch_claims.claim_validation_batch(make_worker(), dataset=other)

    everything = _collection_overview(Scope.everything())
    assert (everything["writing_claims_open"], everything["validation_claims_open"]) == (3, 2)
    ours = _collection_overview(Scope.of_dataset(dataset))
    assert (ours["writing_claims_open"], ours["validation_claims_open"]) == (2, 0)
    assert _collection_overview(Scope.of_dataset(dataset, "train"))["writing_claims_open"] == 0
    assert _collection_overview(Scope.of_dataset(dataset, "dev"))["writing_claims_open"] == 2
    theirs = _collection_overview(Scope.of_dataset(other))
    assert (theirs["writing_claims_open"], theirs["validation_claims_open"]) == (1, ValidationClaim.objects.count())
