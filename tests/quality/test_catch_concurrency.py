"""Twelve validators at once meeting catch trials: no bonus counted twice, none paid twice."""

import random
import threading
import time
from collections import Counter
from decimal import Decimal
from typing import Any

from django.db import connection
from django.db.models import Count

from corpus.models import Label, Pair
from corpus.recompute import recompute_gold
from quality import bonuses
from quality.models import BonusEntry, BonusKind, CatchTrialAnswer, ReferenceLabel
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
from validation.models import ValidationClaim

from .test_catch_trials import catch_pair, make_study, session_for

WORKERS = 12
PAIRS = 40
CATCH = 6


def validate(worker, session, seed, start, errors, deadline):
    rng = random.Random(seed)
    try:
        start.wait()
        while time.monotonic() < deadline:
            batch = batch_claims.claim_validation_batch(worker, study_session=session)
            if batch is None:
                # Others may hold the last places: stop only when the corpus is complete.
                if not Pair.objects.filter(needs_validation=True, label_count__lt=5).exists():
                    return
                time.sleep(0.01)
                continue
            claims = list(ValidationClaim.objects.filter(batch=batch).select_related("pair__reference_label"))
            labels = {}
            for claim in claims:
                if claim.is_catch_trial and rng.random() < 0.8:
                    labels[claim.pair_id] = claim.pair.reference_label.label
                else:
                    labels[claim.pair_id] = rng.choice(list(Label))
            services.submit_validation_batch(worker, batch, labels)
            # A double submit (a second tab, a retried POST) must not score or pay anything again.
            try:
                services.submit_validation_batch(worker, batch, labels)
            except batch_claims.BatchAlreadySubmitted:
                pass
            else:
                raise AssertionError("a batch was submitted twice")
        raise AssertionError("validation did not finish before the deadline")
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()


def pay(study, ids, start, results, errors):
    try:
        start.wait()
        results.append(bonuses.mark_paid(study, ids))
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()


def test_twelve_validators_meet_catch_trials_and_no_bonus_counts_twice(transactional_db, make_worker):
    dataset = make_dataset()
    for number in range(PAIRS):
        make_pair(dataset, label=list(Label)[number % 3])
    traps = [catch_pair(dataset, label=list(Label)[number % 3]) for number in range(CATCH)]
    trap_counters = {p.pk: (p.label_count, p.gold_label) for p in traps}
    study = make_study(dataset, share=0.5, bonus="1.00")
    validators = [make_worker() for _ in range(WORKERS)]
    sessions = [session_for(study, worker, f"S{number}") for number, worker in enumerate(validators)]

    start = threading.Barrier(WORKERS)
    errors: list[str] = []
    threads = [
        threading.Thread(target=validate, args=(worker, session, seed, start, errors, time.monotonic() + 240))
        for seed, (worker, session) in enumerate(zip(validators, sessions, strict=False))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a validator thread hung"
    assert errors == []

    answers = CatchTrialAnswer.objects.all()
    assert answers.count() > 0, "the validators met no catch trial"
    # Every catch trial at most once per worker, and a bonus for exactly each match.
    assert not answers.values("worker", "pair").annotate(k=Count("id")).filter(k__gt=1).exists()
    earned = BonusEntry.objects.filter(kind=BonusKind.EARNED)
    assert earned.count() == answers.filter(matched=True).count()
    assert not earned.values("worker", "pair", "study_session").annotate(k=Count("id")).filter(k__gt=1).exists()
    assert Counter(earned.values_list("worker_id", flat=True)) == Counter(
        answers.filter(matched=True).values_list("worker_id", flat=True)
    )
    # Catch-trial labels left the catch pairs' counters alone; every other pair got its five labels.
    for pair in Pair.objects.filter(pk__in=trap_counters):
        assert (pair.label_count, pair.gold_label) == trap_counters[pair.pk]
    assert not Pair.objects.filter(needs_validation=True, label_count__lt=5).exclude(pk__in=trap_counters).exists()
    assert recompute_gold(fix=False).disagreements == 0
    assert ReferenceLabel.objects.filter(is_catch_trial=True).count() == CATCH

    # Two researchers pay the same bonuses at the same moment: each is paid once.
    ids = list(earned.values_list("pk", flat=True))
    start = threading.Barrier(2)
    results: list[dict[str, Any]] = []
    errors = []
    payers = [threading.Thread(target=pay, args=(study, ids, start, results, errors)) for _ in range(2)]
    for thread in payers:
        thread.start()
    for thread in payers:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(r["paid"] for r in results) == [0, len(ids)]
    assert BonusEntry.objects.filter(kind=BonusKind.PAID).count() == len(ids)
    assert sum(r["amount"] for r in results) == Decimal("1.00") * len(ids)
    assert list(bonuses.unpaid(study)) == []
