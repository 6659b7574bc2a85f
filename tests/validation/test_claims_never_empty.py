"""A claim never answers "no task" while work remains, however many claimers ask at once (PostgreSQL).

SKIP LOCKED + LIMIT returns nothing when every candidate it reaches is locked by another claimer,
and a candidate list can be filled by claims committed just after the claim's snapshot: both once
made one claim in ~2,250 come back empty under contention. Here every claimer takes
a batch and never submits, and there are always more free places than claimers need.
"""

import pytest
from django.contrib.auth import get_user_model
from django.db.models import Count, F, Q
from django.utils import timezone

from collection import writing_claims
from corpus.models import Label, Pair, Premise, Worker
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.concurrency import at_once
from validation import batch_claims
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = [pytest.mark.django_db(transaction=True)]

CLAIMERS = 24
ROUNDS = 3


def new_workers(count, prefix):
    model = get_user_model()
    return [Worker.objects.create(user=model.objects.create(username=f"{prefix}-{i}")) for i in range(count)]


def test_concurrent_validation_claims_never_say_no_task_while_places_remain():
    dataset = make_dataset()
    authors = new_workers(3, "author")
    pairs = ROUNDS * CLAIMERS * 5 // 4 + 20  # four free places a pair: always more than the claimers take
    for number in range(pairs):
        make_pair(dataset, author=authors[number % 3], label=list(Label)[number % 3])
    for round_number in range(ROUNDS):
        claimers = new_workers(CLAIMERS, f"validator{round_number}")
        results = at_once(
            [lambda w=w: batch_claims.claim_validation_batch(w, dataset=dataset) for w in claimers], what="a claimer"
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert errors == []
        assert None not in results, f"round {round_number}: {results.count(None)} claims said 'no task'"
    # Nothing over-held: a pair's labels plus its live claims never pass five.
    now = timezone.now()
    live = Count("validation_claims", filter=Q(validation_claims__status="open", validation_claims__expires_at__gt=now))
    assert not Pair.objects.annotate(live=live).filter(live__gt=5 - F("label_count")).exists()
    assert ValidationClaim.objects.values("pair", "worker").annotate(n=Count("id")).filter(n__gt=1).count() == 0


def test_concurrent_writing_claims_never_say_no_task_while_premises_remain():
    dataset, genre = writing_setup()
    add_premises(dataset, genre, ROUNDS * CLAIMERS + 10)
    for round_number in range(ROUNDS):
        claimers = new_workers(CLAIMERS, f"writer{round_number}")
        results = at_once(
            [lambda w=w: writing_claims.claim_next_premise(w, dataset=dataset) for w in claimers], what="a claimer"
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        assert errors == []
        assert None not in results, f"round {round_number}: {results.count(None)} claims said 'no task'"
        premises = [claim.premise_id for claim in results]
        assert len(set(premises)) == len(premises)  # one writer a premise
    assert Premise.objects.filter(dataset=dataset).count() > ROUNDS * CLAIMERS
