"""Each guard of the validation claim selector alone (validation/selectors.py): a worker is never
offered their own pair, a pair they labelled, or a pair they held a claim on, and each of these is
guarded twice, so each test builds the case that only one guard catches."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from corpus.models import AUTHOR_POSITION, Label, ValidationLabel
from corpus.services import add_label
from crowd.models import ClaimStatus
from quality.models import CatchTrialAnswer
from tests.present import present
from validation import batch_claims, selectors
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def offered(worker):
    return set(selectors.claimable_pairs(worker, timezone.now()))


def test_own_pair_without_the_authors_label_row_is_not_offered(make_worker):
    """The author guard alone: the author's label row names nobody (as for an imported pair), so
    the labelled-pairs guard does not see it."""
    dataset = make_dataset()
    author = make_worker()
    own, other = make_pair(dataset, author=author), make_pair(dataset)
    ValidationLabel.objects.filter(pair=own, position=AUTHOR_POSITION).update(worker=None)
    assert offered(author) == {other.pk}


def test_a_pair_labelled_outside_any_claim_is_not_offered(make_worker):
    """The labelled-pairs guard alone: a label with no claim behind it (an import, the demo)."""
    dataset = make_dataset()
    validator = make_worker()
    labelled, other = make_pair(dataset), make_pair(dataset)
    add_label(labelled, Label.NEUTRAL, worker=validator)
    assert not ValidationClaim.objects.filter(worker=validator).exists()
    assert offered(validator) == {other.pk}


def test_a_pair_once_claimed_and_let_expire_is_not_offered_again(make_worker):
    """The claim-history guard alone: the worker held the pair and never labelled it."""
    dataset = make_dataset()
    validator = make_worker()
    pairs = [make_pair(dataset) for _ in range(6)]
    batch = present(batch_claims.claim_validation_batch(validator))
    held = set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
    ValidationClaim.objects.filter(batch=batch).update(
        status=ClaimStatus.EXPIRED, expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert not ValidationLabel.objects.filter(worker=validator).exists()
    assert offered(validator) == {p.pk for p in pairs} - held


def test_a_catch_trial_answer_is_unique_per_worker_and_pair(make_worker):
    import uuid

    dataset = make_dataset()
    worker, pair = make_worker(), make_pair(dataset)
    fields = {"worker": worker, "pair": pair, "batch": uuid.uuid4(), "label": "neutral", "expected": "neutral"}
    CatchTrialAnswer.objects.create(matched=True, **fields)
    with pytest.raises(IntegrityError), transaction.atomic():
        CatchTrialAnswer.objects.create(matched=True, **{**fields, "batch": uuid.uuid4()})
    assert CatchTrialAnswer.objects.filter(worker=worker, pair=pair).count() == 1
