"""Per-premise labels under concurrency (PostgreSQL: real row locks, many connections): a
premise-hypothesis pair never gets a fourth judgment, nor one worker's second."""

import random
import threading
import time
from functools import partial

import pytest
from django.db import connection
from django.db.models import Count

from corpus.models import Label
from tests.present import present
from validation import premise_labels as services
from validation.models import PremiseLabel, PremiseLabelClaim, PremisePair

from .concurrent_submits import submit_at_once
from .premise_helpers import make_items, stale_premise_pairs

WORKERS = 10
ITEMS = 3  # twelve premise pairs, 36 judgments


def label_until_done(worker, seed, start, errors, deadline):
    rng = random.Random(seed)
    try:
        start.wait()
        while True:
            batch = services.claim_premise_batch(worker)
            if batch is None:
                if not PremisePair.objects.filter(label_count__lt=3).exists():
                    return
                if not PremisePair.objects.filter(label_count__lt=3).exclude(claims__worker=worker).exists():
                    return  # what is left, this worker has labelled or walked away from
                if time.monotonic() > deadline:
                    raise AssertionError("premise pairs still lack judgments after the deadline")
                time.sleep(0.01)
                continue
            pairs = list(PremiseLabelClaim.objects.filter(batch=batch).values_list("premise_pair_id", flat=True))
            if rng.random() < 0.15:  # walks away: the claim expires and its places come back
                PremiseLabelClaim.objects.filter(batch=batch).update(expires_at="2000-01-01T00:00:00Z")
                continue
            services.submit_premise_batch(worker, batch, {pk: rng.choice(list(Label)).value for pk in pairs})
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()


def test_concurrent_workers_leave_exactly_three_judgments_per_premise_pair(transactional_db, make_worker):
    make_items(ITEMS)
    workers = [make_worker() for _ in range(WORKERS)]
    start = threading.Barrier(WORKERS)
    errors: list[str] = []
    threads = [
        threading.Thread(target=label_until_done, args=(worker, seed, start, errors, time.monotonic() + 240))
        for seed, worker in enumerate(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a worker thread hung"
    assert errors == []
    per_pair = PremisePair.objects.annotate(n=Count("labels"), workers=Count("labels__worker", distinct=True))
    assert {(pair.n, pair.workers, pair.label_count) for pair in per_pair} == {(3, 3, 3)}
    assert PremiseLabel.objects.count() == ITEMS * 4 * 3
    assert stale_premise_pairs() == 0


@pytest.mark.django_db(transaction=True)
def test_two_submits_for_the_last_place_at_once_save_one(make_worker):
    make_items(1)
    premise_pair = present(PremisePair.objects.order_by("index").first())
    for label in (Label.ENTAILMENT, Label.NEUTRAL):
        services.add_premise_labels(make_worker(), {premise_pair.pk: label.value})
    late = [make_worker(), make_worker()]
    outcomes = submit_at_once(
        lambda: PremisePair.objects.select_for_update().get(pk=premise_pair.pk),
        [partial(services.add_premise_labels, worker, {premise_pair.pk: Label.CONTRADICTION.value}) for worker in late],
        what="the premise pair",
    )
    refused = [outcome.message for outcome in outcomes if isinstance(outcome, services.PremiseLabelRefused)]
    saved = [outcome for outcome in outcomes if isinstance(outcome, list)]
    assert len(saved) == 1 and len(refused) == 1 and "three judgments" in refused[0], outcomes
    premise_pair.refresh_from_db()
    assert (premise_pair.label_count, premise_pair.consensus) == (3, "-")
    assert PremiseLabel.objects.filter(premise_pair=premise_pair).count() == 3
