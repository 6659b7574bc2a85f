"""The five-label cap does not rest on the counters alone.

Before: `label_refusal` read only `Pair.label_count`, so while counters were low (zeroed by a
benchmark, as any drift would) validators added labels beyond the fifth, and the recompute, which
counts the earliest five, reported those pairs consistent and left them. Now a pair's labels that
count are counted in the label table under its row lock before it takes one, and the recompute
reports pairs holding more than five labels that count (`recompute_gold --check` fails on them).
"""

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from corpus.models import Pair, ValidationLabel, Worker
from corpus.recompute import recompute_gold, surplus_labels
from corpus.services import LabelRefused, add_label, add_labels
from tests.importers.helpers import C, E, N, make_dataset, make_labelled_pairs

pytestmark = pytest.mark.django_db


def make_validators(count, prefix="v"):
    return [Worker.objects.create(user=User.objects.create(username=f"{prefix}{i}")) for i in range(count)]


def counters(pair):
    pair.refresh_from_db()
    return (pair.label_count, pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes, pair.gold_label)


def five_labels_with_counters_at_zero(slug="cap"):
    """A pair with five labels in the table whose counters read zero (the helper leaves them so)."""
    (pair,) = make_labelled_pairs(make_dataset(slug), [[E, E, E, N, N]])
    assert pair.label_count == 0 and pair.labels.count() == 5
    return pair


def test_one_label_beyond_the_fifth_is_refused_though_the_counter_says_none():
    pair = five_labels_with_counters_at_zero()
    (validator,) = make_validators(1)
    with pytest.raises(LabelRefused, match="already has all 5 labels"):
        add_label(Pair.objects.get(pk=pair.pk), C, worker=validator)
    assert pair.labels.count() == 5


def test_a_batch_with_a_pair_beyond_its_fifth_label_is_refused_whole():
    full = five_labels_with_counters_at_zero()
    (open_pair,) = make_labelled_pairs(make_dataset("cap"), [[E]], prefix="o")
    (validator,) = make_validators(1)
    with pytest.raises(LabelRefused, match="already has all 5 labels"):
        add_labels([(Pair.objects.get(pk=open_pair.pk), N), (Pair.objects.get(pk=full.pk), C)], worker=validator)
    assert (full.labels.count(), open_pair.labels.count()) == (5, 1)


def test_a_pair_short_of_five_labels_that_count_still_takes_a_replacement():
    (pair,) = make_labelled_pairs(make_dataset("heal"), [[E]])
    guesser, *others = make_validators(5)
    for position, worker in enumerate([guesser, *others[:3]], start=2):
        ValidationLabel.objects.create(pair=pair, worker=worker, position=position, label=E)
    ValidationLabel.objects.filter(worker=guesser).update(excluded=True)  # outside the service
    recompute_gold()
    assert counters(pair)[0] == 4
    add_label(Pair.objects.get(pk=pair.pk), N, worker=others[3])
    assert counters(pair) == (5, 4, 1, 0, E)
    assert ValidationLabel.objects.get(pair=pair, worker=others[3]).position == 6


def overfull_pair():
    """A pair as the old writer left it: five labels, then a sixth added while its counter was low."""
    pair = five_labels_with_counters_at_zero("overfull")
    (late,) = make_validators(1, prefix="late")
    ValidationLabel.objects.create(pair=pair, worker=late, position=6, label=C)
    return pair


def test_the_check_reports_a_pair_with_more_than_five_labels_that_count():
    pair = overfull_pair()
    report = recompute_gold(fix=False)
    assert (report.overfull_pairs, report.surplus_labels) == (1, 1)
    assert report.overfull_examples == [{"pair_id": pair.pair_id, "positions": [6]}]
    assert report.drifted
    assert "pairs with more than 5 labels that count: 1" in report.summary()
    assert list(surplus_labels().values_list("position", flat=True)) == [6]


def test_the_rebuild_counts_the_earliest_five_and_keeps_reporting_the_rest():
    pair = overfull_pair()
    report = recompute_gold()
    assert report.fixed == 1
    # The counters count positions 1-5 (3 E, 2 N); the sixth label stays in the table, reported.
    assert counters(pair) == (5, 3, 2, 0, E)
    assert pair.labels.count() == 6
    again = recompute_gold()
    assert (again.disagreements, again.overfull_pairs) == (0, 1)


def test_recompute_gold_check_fails_on_a_pair_with_more_than_five_labels(capsys):
    overfull_pair()
    call_command("recompute_gold", "--dataset", "overfull")  # the counters set right
    with pytest.raises(CommandError, match="1 pairs hold more than five labels that count"):
        call_command("recompute_gold", "--dataset", "overfull", "--check")
    assert "surplus labels in positions [6]" in capsys.readouterr().out
