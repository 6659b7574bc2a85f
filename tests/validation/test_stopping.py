"""Stopping rules at label time: a pair whose gold is decided leaves the claim queue in
the submit that decides it, claims never serve it again, and live claims on it lose nothing."""

import random
import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus import recompute, stopping_policies
from corpus.exclusions import set_workers_excluded
from corpus.models import Label, Pair, Split, StoppingPolicy, StoppingRule, ValidationLabel
from corpus.services import add_label
from corpus.stopping import gold_is_decided, majority_gold
from crowd.models import ClaimStatus
from model_annotators.live_vote import votes_on
from teams.models import default_team_id
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def decided_dataset(slug="decided"):
    dataset = make_dataset(slug)
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.DECIDED)
    return dataset


def claim_and_submit(worker, label, dataset=None):
    batch = batch_claims.claim_validation_batch(worker, dataset=dataset)
    assert batch is not None
    pks = ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)
    return services.submit_validation_batch(worker, batch, dict.fromkeys(pks, label))


@pytest.mark.django_db
def test_a_decided_pair_stops_at_three_agreeing_labels_and_is_never_served(make_worker):
    dataset = decided_dataset()
    pair = make_pair(dataset, label=E)
    assert pair.stopping_rule == StoppingRule.DECIDED and pair.needs_validation
    claim_and_submit(make_worker(), E)
    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early, pair.needs_validation) == (2, False, True)
    claim_and_submit(make_worker(), E)
    pair.refresh_from_db()
    assert (pair.label_count, pair.gold_label, pair.stopped_early, pair.needs_validation) == (3, E, True, False)
    assert batch_claims.claim_validation_batch(make_worker()) is None


@pytest.mark.django_db
def test_fixed_pairs_take_five_labels(make_worker):
    dataset = make_dataset("fixed")
    pair = make_pair(dataset, label=E)
    assert pair.stopping_rule == StoppingRule.FIXED
    for _ in range(4):
        claim_and_submit(make_worker(), E)
    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early) == (5, False)


@pytest.mark.django_db
def test_a_live_claim_on_a_stopped_pair_is_taken_and_counted(make_worker):
    """Three validators hold the pair; two agree with the author and stop it. The third submits
    later: no error, the label counts (the gold cannot change), and nobody is served the pair again."""
    dataset = decided_dataset()
    pair = make_pair(dataset, label=E)
    workers = [make_worker() for _ in range(3)]
    batches = [present(batch_claims.claim_validation_batch(worker)) for worker in workers]
    assert all(batches)
    for worker, batch in zip(workers[:2], batches[:2], strict=True):
        services.submit_validation_batch(worker, batch, {pair.pk: E})
    pair.refresh_from_db()
    assert pair.stopped_early and pair.label_count == 3
    services.submit_validation_batch(workers[2], batches[2], {pair.pk: N})
    pair.refresh_from_db()
    assert (pair.label_count, pair.neutral_votes, pair.gold_label, pair.stopped_early) == (4, 1, E, True)
    assert ValidationClaim.objects.filter(batch=batches[2], status=ClaimStatus.SUBMITTED).exists()
    assert batch_claims.claim_validation_batch(make_worker()) is None
    assert recompute.recompute_gold(fix=False).disagreements == 0


@pytest.mark.django_db
def test_add_label_stops_a_decided_pair_too(make_worker):
    dataset = decided_dataset()
    pair = make_pair(dataset, label=C)
    add_label(pair, C)
    add_label(pair, N)
    pair.refresh_from_db()
    assert not pair.stopped_early
    add_label(pair, C)
    pair.refresh_from_db()
    assert (pair.label_count, pair.gold_label, pair.stopped_early, pair.needs_validation) == (4, C, True, False)


@pytest.mark.django_db
def test_choosing_the_rule_records_it_and_stops_settled_pairs(make_worker):
    dataset = make_dataset("switch")
    settled = make_pair(dataset, label=E, needs_validation=False)
    open_pair = make_pair(dataset, label=E, needs_validation=False)
    for label in (E, E):
        add_label(settled, label)
    add_label(open_pair, N)
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.DECIDED)
    services.mark_dev_test_for_validation(dataset)
    settled.refresh_from_db()
    open_pair.refresh_from_db()
    assert settled.stopping_rule == open_pair.stopping_rule == StoppingRule.DECIDED
    assert (settled.stopped_early, settled.needs_validation) == (True, False)
    assert (open_pair.stopped_early, open_pair.needs_validation) == (False, True)
    # Marking the split again reopens nothing.
    assert services.mark_dev_test_for_validation(dataset) == 0
    settled.refresh_from_db()
    assert (settled.stopped_early, settled.needs_validation) == (True, False)
    # Back to fixed (five labels a pair): every pair of the split follows, the stopped one reopens.
    StoppingPolicy.objects.filter(dataset=dataset).update(rule=StoppingRule.FIXED)
    assert stopping_policies.apply_stopping_policy(dataset, Split.DEV) == (2, 0)
    open_pair.refresh_from_db()
    settled.refresh_from_db()
    assert open_pair.stopping_rule == settled.stopping_rule == StoppingRule.FIXED
    assert (settled.stopped_early, settled.needs_validation) == (False, True)


@pytest.mark.django_db
def test_an_exclusion_that_undecides_a_stopped_pair_queues_it_again(make_worker):
    dataset = decided_dataset()
    pair = make_pair(dataset, label=E)
    validators = [make_worker() for _ in range(2)]
    for worker in validators:
        claim_and_submit(worker, E)
    pair.refresh_from_db()
    assert pair.stopped_early
    set_workers_excluded(type(validators[0]).objects.filter(pk=validators[0].pk), True, teams=[default_team_id()])
    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early, pair.needs_validation) == (2, False, True)


def statements(callable_):
    with CaptureQueriesContext(connection) as queries:
        result = callable_()
    return len(queries), result


@pytest.mark.django_db
def test_claims_and_submits_take_the_same_statements_under_either_rule(make_worker):
    """The decided rule rides in the submit's counter UPDATE and the claim's index: no statement more."""
    counts = {}
    votes_on()  # whether a study gives a model a vote: cached, read once a minute (model_annotators.live_vote)
    for rule in (StoppingRule.FIXED, StoppingRule.DECIDED):
        dataset = make_dataset(f"count-{rule}")
        StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=rule)
        pairs = [make_pair(dataset, label=E) for _ in range(5)]
        for pair in pairs:
            add_label(pair, E)  # the next label decides a decided pair
        worker = make_worker()
        claim_n, batch = statements(lambda w=worker, d=dataset: batch_claims.claim_validation_batch(w, dataset=d))
        submit_n, _ = statements(
            lambda w=worker, b=batch, ps=pairs: services.submit_validation_batch(w, b, {p.pk: E for p in ps})
        )
        counts[rule] = (claim_n, submit_n)
        stopped = Pair.objects.filter(dataset=dataset, stopped_early=True).count()
        assert stopped == (5 if rule == StoppingRule.DECIDED else 0)
    assert counts[StoppingRule.FIXED] == counts[StoppingRule.DECIDED], counts


# --- PostgreSQL: many validators at once -------------------------------------------------------

WORKERS = 10
PAIRS = 25


def validate_until_none_left(worker, seed, start, errors, deadline):
    rng = random.Random(seed)
    try:
        start.wait()
        while True:
            batch = batch_claims.claim_validation_batch(worker)
            if batch is None:
                if not Pair.objects.filter(needs_validation=True, label_count__lt=5).exists():
                    return
                if time.monotonic() > deadline:
                    raise AssertionError("pairs still open after the deadline")
                time.sleep(0.01)
                continue
            pks = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
            if rng.random() < 0.1:
                ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now())
                continue
            time.sleep(rng.random() * 0.02)  # others stop pairs this batch holds meanwhile
            # Mostly agreeing labels, so that most pairs stop at three or four.
            services.submit_validation_batch(
                worker, batch, {pk: E if rng.random() < 0.7 else rng.choice([N, C]) for pk in pks}
            )
    except Exception as error:
        errors.append(repr(error))
    finally:
        connection.close()


def test_concurrent_validators_are_never_served_a_stopped_pair(transactional_db, make_worker):
    dataset = decided_dataset()
    authors = [make_worker() for _ in range(3)]
    for number in range(PAIRS):
        make_pair(dataset, author=authors[number % 3], label=E)
    validators = [make_worker() for _ in range(WORKERS)]
    start = threading.Barrier(WORKERS)
    errors: list[str] = []
    threads = [
        threading.Thread(target=validate_until_none_left, args=(w, seed, start, errors, time.monotonic() + 240))
        for seed, w in enumerate(validators)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []
    assert Pair.objects.filter(stopped_early=True).exists()
    for pair in Pair.objects.all():
        labels = list(ValidationLabel.objects.filter(pair=pair).order_by("position"))
        assert len(labels) == pair.label_count <= 5
        assert pair.stopped_early or pair.label_count == 5
        if not pair.stopped_early:
            continue
        # The label that decided it; no claim on the pair came after it (the claim queue lost the
        # pair in the submit that wrote that label).
        for k in range(1, len(labels) + 1):
            e, n, c = (sum(1 for x in labels[:k] if x.label == name) for name in (E, N, C))
            if gold_is_decided(e, n, c, k):
                deciding = labels[k - 1]
                break
        else:
            raise AssertionError(f"stopped pair {pair.pair_id} is not decided")
        later = ValidationClaim.objects.filter(pair=pair, created_at__gt=deciding.created_at)
        assert not later.exists(), (pair.pair_id, list(later.values("created_at", "status")))
        # Its gold is the one its labels up to the deciding one gave, late labels or not.
        assert pair.gold_label == majority_gold([x.label for x in labels[:k]])
    assert recompute.recompute_gold(fix=False).disagreements == 0


@pytest.mark.django_db
def test_the_counters_stop_every_label_sequence_where_the_replay_does():
    """All 243 five-label sequences, label by label through corpus.services on the decided rule:
    each pair stops exactly where corpus.stopping's replay stops it, with the five-label gold."""
    import itertools

    from corpus.stopping import DECIDED, replay_sequence

    dataset = decided_dataset("every-sequence")
    for sequence in itertools.product((E, N, C), repeat=5):
        pair = make_pair(dataset, label=sequence[0])
        for label in sequence[1:]:
            if not pair.needs_validation:
                break
            add_label(pair, label)
            pair.refresh_from_db(fields=["needs_validation", "stopped_early"])
        pair.refresh_from_db()
        used, gold = replay_sequence(list(sequence), DECIDED)
        assert (pair.label_count, pair.gold_label) == (used, gold), sequence
        assert pair.stopped_early == (used < 5), sequence
        assert gold == majority_gold(list(sequence))
