"""Claiming batches of five pairs and adding labels (MultiNLI §2.1, SNLI §2.2)."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db.models import Count
from django.utils import timezone

from corpus.models import Label, Pair, PremiseStatus, Split, ValidationLabel
from corpus.services import add_label
from crowd.models import ClaimStatus
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim, ValidationPolicy

from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def claimed_pairs(batch):
    return set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))


def test_batch_has_five_pairs_and_expires_later(dataset, make_worker):
    pairs = [make_pair(dataset) for _ in range(7)]
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    claims = ValidationClaim.objects.filter(batch=batch)
    assert claims.count() == 5
    assert claimed_pairs(batch) <= {p.pk for p in pairs}
    assert all(c.worker == worker and c.status == ClaimStatus.OPEN and c.expires_at > timezone.now() for c in claims)


def test_own_pair_is_never_offered(dataset, make_worker):
    author = make_worker()
    own = [make_pair(dataset, author=author) for _ in range(5)]
    others = [make_pair(dataset) for _ in range(2)]
    batch = batch_claims.claim_validation_batch(author)
    assert claimed_pairs(batch) == {p.pk for p in others}
    assert not claimed_pairs(batch) & {p.pk for p in own}


def test_reload_returns_the_same_batch(dataset, make_worker):
    for _ in range(12):
        make_pair(dataset)
    worker = make_worker()
    first = batch_claims.claim_validation_batch(worker)
    again = batch_claims.claim_validation_batch(worker)
    assert first == again
    assert ValidationClaim.objects.filter(worker=worker).count() == 5


def test_a_pair_is_never_given_twice_to_the_same_worker(dataset, make_worker):
    pairs = [make_pair(dataset) for _ in range(8)]
    worker = make_worker()
    seen = []
    first = present(batch_claims.claim_validation_batch(worker))
    seen += claimed_pairs(first)
    services.submit_validation_batch(worker, first, dict.fromkeys(claimed_pairs(first), Label.NEUTRAL))
    second = present(batch_claims.claim_validation_batch(worker))
    seen += claimed_pairs(second)
    assert len(claimed_pairs(second)) == 3  # only the three it has not seen
    assert len(seen) == len(set(seen)) == 8
    services.submit_validation_batch(worker, second, dict.fromkeys(claimed_pairs(second), Label.NEUTRAL))
    assert batch_claims.claim_validation_batch(worker) is None
    assert {p.pk for p in pairs} == set(seen)


def test_an_expired_claim_is_not_given_back_to_its_worker(dataset, make_worker):
    for _ in range(6):
        make_pair(dataset)
    worker = make_worker()
    old = present(batch_claims.claim_validation_batch(worker))
    ValidationClaim.objects.filter(batch=old).update(expires_at=timezone.now() - timedelta(seconds=1))
    new = batch_claims.claim_validation_batch(worker)
    assert new != old
    assert not claimed_pairs(new) & claimed_pairs(old)
    assert set(ValidationClaim.objects.filter(batch=old).values_list("status", flat=True)) == {ClaimStatus.EXPIRED}


def test_closest_to_complete_first(dataset, make_worker):
    validators = [make_worker() for _ in range(3)]
    fresh = [make_pair(dataset) for _ in range(3)]
    two = [make_pair(dataset) for _ in range(2)]
    four = [make_pair(dataset) for _ in range(2)]
    for pair in two:
        add_label(pair, Label.ENTAILMENT, worker=validators[0])
    for pair in four:
        for validator in validators:
            add_label(pair, Label.ENTAILMENT, worker=validator)
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    # Which pairs: the closest to complete; in what order on the page: a random one.
    claimed = set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
    assert claimed == {four[0].pk, four[1].pk, two[0].pk, two[1].pk, fresh[0].pk}


def test_a_pair_with_four_live_claims_is_full(dataset, make_worker):
    pair = make_pair(dataset)
    holders = [make_worker() for _ in range(4)]
    for holder in holders:
        assert claimed_pairs(batch_claims.claim_validation_batch(holder)) == {pair.pk}
    assert batch_claims.claim_validation_batch(make_worker()) is None


def test_expired_claims_return_to_the_pool(dataset, make_worker):
    pair = make_pair(dataset)
    holders = [make_worker() for _ in range(4)]
    batches = [present(batch_claims.claim_validation_batch(holder)) for holder in holders]
    late = make_worker()
    assert batch_claims.claim_validation_batch(late) is None
    ValidationClaim.objects.filter(batch=batches[0]).update(expires_at=timezone.now() - timedelta(minutes=1))
    batch = present(batch_claims.claim_validation_batch(late))
    assert claimed_pairs(batch) == {pair.pk}
    assert ValidationClaim.objects.get(batch=batches[0]).status == ClaimStatus.EXPIRED


def test_pairs_not_needing_validation_complete_or_held_are_not_offered(dataset, make_worker):
    make_pair(dataset, needs_validation=False, split=Split.TRAIN)
    held = make_pair(dataset)
    held.premise.status = PremiseStatus.HELD
    held.premise.save()
    done = make_pair(dataset)
    for _ in range(4):
        add_label(done, Label.NEUTRAL, worker=make_worker())
    wanted = make_pair(dataset)
    assert claimed_pairs(batch_claims.claim_validation_batch(make_worker())) == {wanted.pk}


def test_dataset_filter(dataset, make_worker):
    other = make_dataset("other")
    mine = make_pair(dataset)
    make_pair(other)
    assert claimed_pairs(batch_claims.claim_validation_batch(make_worker(), dataset=dataset)) == {mine.pk}


def test_excluded_worker_gets_no_tasks(dataset, make_worker):
    make_pair(dataset)
    worker = make_worker(is_excluded=True)  # by the team of the dataset
    with pytest.raises(batch_claims.NotAllowedToValidate, match="not taking part"):
        batch_claims.claim_validation_batch(worker, dataset=dataset)
    assert batch_claims.claim_validation_batch(worker) is None  # outside a study: none of the team's pairs
    assert not ValidationClaim.objects.exists()


def test_trusted_only_dataset(dataset, make_worker):
    ValidationPolicy.objects.create(dataset=dataset, trusted_only=True)
    closed = make_pair(dataset)
    open_pair = make_pair(make_dataset("open"))
    untrusted = make_worker()
    with pytest.raises(batch_claims.NotAllowedToValidate, match="trusted"):
        batch_claims.claim_validation_batch(untrusted, dataset=dataset)
    # Asking for any dataset, the untrusted worker sees only the open one.
    assert claimed_pairs(batch_claims.claim_validation_batch(untrusted)) == {open_pair.pk}
    trusted = make_worker(is_trusted=True)
    assert claimed_pairs(batch_claims.claim_validation_batch(trusted, dataset=dataset)) == {closed.pk}


# --- add_label (corpus.services) ----------------------------------------------------------------------


def test_labels_move_counters_and_gold(dataset, make_worker):
    pair = make_pair(dataset, label=Label.CONTRADICTION)
    picks = [Label.CONTRADICTION, Label.NEUTRAL, Label.CONTRADICTION, Label.ENTAILMENT]
    golds = []
    for pick in picks:
        label = add_label(pair, pick, worker=make_worker())
        golds.append(Pair.objects.get(pk=pair.pk).gold_label)
    assert golds == ["-", "-", "contradiction", "contradiction"]
    assert label.position == 5
    pair.refresh_from_db()
    assert (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes) == (5, 1, 1, 3)
    assert list(pair.labels.values_list("position", flat=True)) == [1, 2, 3, 4, 5]


def test_sixth_label_duplicate_and_own_pair_are_refused(dataset, make_worker):
    author = make_worker()
    pair = make_pair(dataset, author=author)
    first = make_worker()
    add_label(pair, Label.NEUTRAL, worker=first)
    with pytest.raises(ValidationError, match="already labelled"):
        add_label(pair, Label.NEUTRAL, worker=first)
    with pytest.raises(ValidationError, match="own pairs"):
        add_label(pair, Label.NEUTRAL, worker=author)
    with pytest.raises(ValidationError, match="not a label"):
        add_label(pair, "maybe", worker=make_worker())
    for _ in range(3):
        add_label(pair, Label.NEUTRAL, worker=make_worker())
    with pytest.raises(ValidationError, match="already has all 5"):
        add_label(pair, Label.ENTAILMENT, worker=make_worker())
    pair.refresh_from_db()
    assert pair.label_count == 5 == pair.labels.count()
    assert pair.neutral_votes == 4 and pair.gold_label == "neutral"


def test_a_label_takes_the_position_after_the_highest(dataset):
    pair = make_pair(dataset)
    ValidationLabel.objects.create(pair=pair, position=3, label=Label.NEUTRAL)  # an imported file's gap
    add_label(pair, Label.NEUTRAL)
    assert list(pair.labels.order_by("position").values_list("position", "worker")) == [(1, None), (3, None), (4, None)]


# --- which pairs need validation ---------------------------------------------------------------


def test_sample_train_share_is_reproducible_and_tops_up(dataset):
    train = [make_pair(dataset, split=Split.TRAIN, needs_validation=False) for _ in range(40)]
    dev = [make_pair(dataset, split=Split.DEV, needs_validation=False) for _ in range(3)]
    report = services.sample_train_for_validation(dataset, 0.25, seed=7)
    assert report["newly_marked"] == 10
    marked = set(Pair.objects.filter(needs_validation=True).values_list("pk", flat=True))
    assert len(marked) == 10 and marked <= {p.pk for p in train}
    # Same share again: nothing new. Same seed from scratch: the same pairs.
    assert services.sample_train_for_validation(dataset, 0.25, seed=7)["newly_marked"] == 0
    Pair.objects.update(needs_validation=False)
    services.sample_train_for_validation(dataset, 0.25, seed=7)
    assert set(Pair.objects.filter(needs_validation=True).values_list("pk", flat=True)) == marked
    assert services.sample_train_for_validation(dataset, 0.5, seed=7)["newly_marked"] == 10
    dataset.refresh_from_db()
    assert dataset.train_validation_fraction == 0.5
    assert services.mark_dev_test_for_validation(dataset) == len(dev)
    with pytest.raises(ValidationError):
        services.sample_train_for_validation(dataset, 1.5)


def test_mark_for_validation_command(dataset, capsys):
    for _ in range(20):
        make_pair(dataset, split=Split.TRAIN, needs_validation=False)
    make_pair(dataset, split=Split.TEST, needs_validation=False)
    call_command(
        "mark_for_validation", "--dataset", dataset.slug, "--train-fraction", "0.1", "--seed", "3", verbosity=0
    )
    counts = dict(
        Pair.objects.filter(needs_validation=True)
        .values_list("premise__split")
        .annotate(n=Count("id"))
        .values_list("premise__split", "n")
    )
    assert counts == {"train": 2, "test": 1}
    assert "2 of 20 train pairs" in capsys.readouterr().out
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No dataset 'nope'"):
        call_command("mark_for_validation", "--dataset", "nope", "--train-fraction", "0.1")
