"""Exclusion that heals: a pair that lost an excluded worker's label goes back to the pool and is
completed again to five counted labels; re-including the worker counts the earliest five."""

import pytest

from corpus.exclusions import set_workers_excluded
from corpus.models import Label, Pair, ValidationLabel, Worker
from corpus.recompute import find_disagreements, recompute_gold
from corpus.services import LabelRefused, add_label
from teams.models import default_team_id
from validation import batch_claims, services

from .validation_factories import make_pair

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def counters(pair):
    pair.refresh_from_db()
    return (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes, pair.gold_label)


def full_pair(dataset, make_worker, labels=(E, E, E, N)):
    """A written pair with four validators' labels: five labels, all counted."""
    pair = make_pair(dataset, label=E)
    validators = [make_worker() for _ in labels]
    for worker, label in zip(validators, labels, strict=False):
        add_label(pair, label, worker=worker)
    return pair, validators


def exclude(*workers, excluded=True):
    return set_workers_excluded(
        Worker.objects.filter(pk__in=[w.pk for w in workers]), excluded, teams=[default_team_id()]
    )


def validate_everything(worker, label):
    """The worker claims and submits batches until none is left; returns the pairs they labelled."""
    labelled = []
    while (batch := batch_claims.claim_validation_batch(worker)) is not None:
        from validation.models import ValidationClaim

        pks = list(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))
        services.submit_validation_batch(worker, batch, dict.fromkeys(pks, label))
        labelled += pks
    return labelled


@pytest.mark.django_db
def test_a_pair_that_lost_a_label_is_claimed_submitted_and_counts_five_again(dataset, make_worker):
    pair, (guesser, *_) = full_pair(dataset, make_worker, labels=(C, E, E, N))
    assert counters(pair) == (5, 3, 1, 1, E)
    exclude(guesser)
    assert counters(pair) == (4, 3, 1, 0, E)
    newcomer = make_worker()
    # Before: claimable but refused with "already has all 5 labels". Now it takes a replacement.
    assert validate_everything(newcomer, E) == [pair.pk]
    assert counters(pair) == (5, 4, 1, 0, E)
    replacement = ValidationLabel.objects.get(pair=pair, worker=newcomer)
    assert replacement.position == 6
    # Exactly four counted validation labels: the pair leaves the pool for good.
    assert validate_everything(make_worker(), N) == []
    assert find_disagreements()[0] == 0


@pytest.mark.django_db
def test_every_pair_of_an_excluded_validator_is_completed_again_by_others(dataset, make_worker):
    guesser = make_worker()
    pairs = []
    for _ in range(7):
        pair, _validators = full_pair(dataset, make_worker, labels=(E, E, E))
        add_label(pair, C, worker=guesser)
        pairs.append(pair)
    assert all(counters(p)[0] == 5 for p in pairs)
    exclude(guesser)
    assert all(counters(p)[0] == 4 for p in pairs)
    first, second = make_worker(), make_worker()
    assert sorted(validate_everything(first, E)) == sorted(p.pk for p in pairs)
    assert validate_everything(second, E) == []
    for p in pairs:
        assert counters(p) == (5, 5, 0, 0, E)
        assert ValidationLabel.objects.filter(pair=p).count() == 6


@pytest.mark.django_db
def test_reincluding_counts_the_earliest_five_and_the_replacement_drops_out(dataset, make_worker):
    pair, (guesser, *_) = full_pair(dataset, make_worker, labels=(C, C, N, N))
    assert counters(pair) == (5, 1, 2, 2, "-")
    exclude(guesser)
    replacer = make_worker()
    add_label(pair, E, worker=replacer)
    assert counters(pair) == (5, 2, 2, 1, "-")
    exclude(guesser, excluded=False)
    # Positions 1-5 count again (the guesser's C at 2); the replacement (E at 6) is kept but not counted.
    assert counters(pair) == (5, 1, 2, 2, "-")
    assert ValidationLabel.objects.filter(pair=pair).count() == 6
    assert recompute_gold().disagreements == 0
    # Still full: nobody may add a seventh label.
    with pytest.raises(LabelRefused, match="already has all 5 labels"):
        add_label(pair, E, worker=make_worker())
    # Excluding the guesser again brings the replacement back in.
    exclude(guesser)
    assert counters(pair) == (5, 2, 2, 1, "-")


@pytest.mark.django_db
def test_an_excluded_replacement_worker_leaves_room_for_another(dataset, make_worker):
    pair, (guesser, *_) = full_pair(dataset, make_worker, labels=(C, E, E, E))
    exclude(guesser)
    second_guesser = make_worker()
    add_label(pair, C, worker=second_guesser)
    exclude(second_guesser)
    assert counters(pair)[0] == 4
    third = make_worker()
    label = add_label(pair, E, worker=third)
    assert label.position == 7
    assert counters(pair) == (5, 5, 0, 0, E)
    # Re-including both: the earliest five counted labels are positions 1-5.
    exclude(guesser, second_guesser, excluded=False)
    assert counters(pair) == (5, 4, 0, 1, E)
    assert recompute_gold().disagreements == 0


@pytest.mark.django_db
def test_a_sixth_counted_label_is_still_refused(dataset, make_worker):
    pair, _ = full_pair(dataset, make_worker)
    with pytest.raises(LabelRefused, match="already has all 5 labels"):
        add_label(pair, E, worker=make_worker())
    assert Pair.objects.get(pk=pair.pk).label_count == 5


@pytest.mark.django_db(transaction=True)
def test_heal_end_to_end_on_postgres_with_the_set_based_recompute(make_worker):
    """The PostgreSQL form of the recompute (UPDATE ... FROM) applies the same earliest-five rule."""
    from .validation_factories import make_dataset

    dataset = make_dataset("heal-pg")
    pair, (guesser, *_) = full_pair(dataset, make_worker, labels=(C, N, N, N))
    exclude(guesser)
    assert counters(pair) == (4, 1, 3, 0, N)
    assert validate_everything(make_worker(), E) == [pair.pk]
    assert counters(pair) == (5, 2, 3, 0, N)
    exclude(guesser, excluded=False)
    assert counters(pair) == (5, 1, 3, 1, N)
    # Scrambled counters are set right by the recompute, following the same rule.
    Pair.objects.filter(pk=pair.pk).update(label_count=0, entailment_votes=0, gold_label="-")
    report = recompute_gold()
    assert report.fixed == 1
    assert counters(pair) == (5, 1, 3, 1, N)


@pytest.mark.django_db
def test_a_snapshot_lists_the_labels_gold_counts(dataset, make_worker):
    """Healed: the five counted labels in order; re-included: the earliest five; excluded, not yet
    healed: the excluded worker's TSV slot stays blank (both export paths: Python and SQL lines)."""
    import csv
    import json
    from pathlib import Path

    from modeling.snapshots.services import create_snapshot, export_snapshot

    pair, (guesser, *_) = full_pair(dataset, make_worker, labels=(C, E, E, N))

    def exported():
        snapshot = export_snapshot(create_snapshot(None, datasets=[dataset.slug], filters={"splits": ["dev"]}))
        folder = Path(snapshot.directory)
        (jsonl,) = folder.glob("dev*.jsonl")
        row = next(
            json.loads(line) for line in jsonl.read_text().splitlines() if json.loads(line)["pairID"] == pair.pair_id
        )
        (tsv,) = folder.glob("dev*.tsv")
        line = next(r for r in csv.DictReader(tsv.open(), delimiter="\t") if r["pairID"] == pair.pair_id)
        return row["annotator_labels"], [line[f"label{i}"] for i in range(1, 6)], row["gold_label"]

    exclude(guesser)
    assert exported() == ([E, E, E, N], [E, "", E, E, N], E)
    add_label(pair, C, worker=make_worker())
    assert exported() == ([E, E, E, N, C], [E, E, E, N, C], E)
    exclude(guesser, excluded=False)
    assert exported() == ([E, C, E, E, N], [E, C, E, E, N], E)


@pytest.mark.django_db
def test_excluding_a_worker_releases_their_open_claims_at_once(dataset, make_worker):
    from crowd.models import ClaimStatus
    from quality.services import set_excluded
    from validation.models import ValidationClaim

    pairs = [make_pair(dataset, label=E) for _ in range(5)]
    for pair in pairs:
        services.mark_for_validation(Pair.objects.filter(pk=pair.pk))
    # Each pair still wants four labels: three validators may hold it at once and a fourth waits.
    holders = [make_worker() for _ in range(4)]
    for holder in holders:
        assert batch_claims.claim_validation_batch(holder) is not None
    cheat = holders[0]
    waiting = make_worker()
    assert batch_claims.claim_validation_batch(waiting) is None  # every pair is held four times over

    set_excluded([cheat.pk], True, teams=[default_team_id()])

    assert not ValidationClaim.objects.filter(worker=cheat, status=ClaimStatus.OPEN).exists()
    batch = batch_claims.claim_validation_batch(waiting)
    assert batch is not None
    assert set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True)) == {p.pk for p in pairs}
