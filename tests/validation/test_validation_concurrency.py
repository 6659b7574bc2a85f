"""Many validators claiming and submitting at once still leave every pair with exactly five labels."""

import random
import threading
import time
import uuid

from django.db import connection
from django.db.models import Count, Q
from django.utils import timezone

from corpus.gold import gold_from_votes
from corpus.models import Label, Pair, ValidationLabel
from corpus.recompute import recompute_gold
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

WORKERS = 12
PAIRS = 30


def every_pair_has_five_labels():
    return not Pair.objects.filter(label_count__lt=5).exists()


def validate_until_done(worker, seed, start, errors, stats, deadline):
    """Claim and submit until every pair has its five labels: the stop condition is the corpus's
    state, not a count of empty claims, so a slow machine cannot end a validator early."""
    rng = random.Random(seed)
    try:
        start.wait()
        while True:
            batch = batch_claims.claim_validation_batch(worker)
            if batch is None:
                if every_pair_has_five_labels():
                    return
                if time.monotonic() > deadline:
                    raise AssertionError("pairs still lack labels after the deadline")
                # Others hold the pairs this worker may take; they submit or walk away: look again.
                time.sleep(0.01)
                continue
            pair_ids = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
            if rng.random() < 0.1:  # walks away; the claim expires and its pairs return to the pool
                ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now())
                stats["abandoned"].append(batch)
                continue
            services.submit_validation_batch(worker, batch, {pk: rng.choice(list(Label)) for pk in pair_ids})
            stats["submitted"].append(batch)
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()


def test_concurrent_validators_leave_exactly_five_labels(transactional_db, make_worker):
    dataset = make_dataset()
    authors = [make_worker() for _ in range(3)]
    for number in range(PAIRS):
        make_pair(dataset, author=authors[number % 3], label=list(Label)[number % 3])
    validators = [make_worker() for _ in range(WORKERS)]

    start = threading.Barrier(WORKERS)
    errors: list[str] = []
    stats: dict[str, list[uuid.UUID]] = {"submitted": [], "abandoned": []}
    threads = [
        threading.Thread(target=validate_until_done, args=(worker, seed, start, errors, stats, time.monotonic() + 240))
        for seed, worker in enumerate(validators)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a validator thread hung"
    assert errors == []

    per_pair = Pair.objects.annotate(
        n=Count("labels"),
        e=Count("labels", filter=Q(labels__label=Label.ENTAILMENT)),
        u=Count("labels", filter=Q(labels__label=Label.NEUTRAL)),
        c=Count("labels", filter=Q(labels__label=Label.CONTRADICTION)),
    )
    # Every pair got exactly the author's label plus four, never more.
    assert sorted(per_pair.values_list("n", flat=True)) == [5] * PAIRS
    assert set(
        ValidationLabel.objects.values_list("pair_id", "position").annotate(k=Count("id")).values_list("k", flat=True)
    ) == {1}
    duplicates = (
        ValidationLabel.objects.filter(worker__isnull=False)
        .values("pair_id", "worker_id")
        .annotate(k=Count("id"))
        .filter(k__gt=1)
    )
    assert not duplicates.exists()
    assert not ValidationLabel.objects.filter(position__gt=1, worker__in=authors).exists()
    # The counters moved label by label agree with a recompute from the label table.
    for pair in per_pair:
        assert (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes) == (
            pair.n,
            pair.e,
            pair.u,
            pair.c,
        )
        assert pair.gold_label == gold_from_votes(pair.e, pair.u, pair.c)
    assert recompute_gold(fix=False).disagreements == 0
    assert set(stats["submitted"]) == set(
        ValidationClaim.objects.filter(status="submitted").values_list("batch", flat=True)
    )
    assert len(stats["submitted"]) >= PAIRS * 4 // 5
