"""model_annotators/calibration.py, a calibration's crowd statistics at their edges: the
leave-one-out figures when the model's vote has no leave-one-out gold (an adjudicated pair the
humans split), when a pair has only its author's label, and when the model answered no gold pair;
the humans' median (the upper of two) over the validators with at least twenty leave-one-out
items; the Dawid–Skene fit on two pairs, a human whose labels are the model's counted as not below
it; and a catch trial the model matched counted as matched."""

import pytest

from corpus.adjudication import adjudicate
from corpus.models import Label
from model_annotators.calibration import calibrate
from model_annotators.models import ModelLabel
from quality.models import ReferenceLabel
from tests import factories

from .test_mutants_calibration import ASKED_WITH, OTHER, rounded
from .test_pages_and_uses import endpoint_annotator

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def pairs_of(dataset, labels_of_each, validators=()):
    genre = factories.genre("fiction")
    return [
        factories.pair(dataset, factories.premise(dataset, genre), labels, validators=validators)
        for labels in labels_of_each
    ]


def answer(annotator, pair, label, outcome="labelled"):
    ModelLabel.objects.create(annotator=annotator, pair=pair, asked_with=ASKED_WITH, outcome=outcome, label=label)


@pytest.mark.django_db
def test_a_catch_trial_the_model_matched_counts_as_matched():
    dataset = factories.dataset("calibrated-catch")
    (catch,) = pairs_of(dataset, [[E]])  # no gold: in the calibration as a catch trial only
    ReferenceLabel.objects.create(pair=catch, label=N, is_catch_trial=True)
    annotator = endpoint_annotator(dataset)
    answer(annotator, catch, N)

    figures = calibrate(annotator).figures

    assert figures["catch_trials"] == {"answered": 1, "matched": 1, "share": 1.0}


@pytest.mark.django_db
def test_an_adjudicated_pair_the_humans_split_gives_the_model_no_leave_one_out_item():
    dataset = factories.dataset("calibrated-split")
    (split,) = pairs_of(dataset, [[E, E, N, N, C]])
    adjudicate(split, N)  # without the model's vote, no three humans agree: no leave-one-out gold
    annotator = endpoint_annotator(dataset)
    answer(annotator, split, N)

    figures = calibrate(annotator).figures

    assert figures["leave_one_out"] == {"items": 0, "agreement": None, "chance": None, "human_median": None}
    assert figures["dawid_skene"] == {}  # one pair: nothing to fit


@pytest.mark.django_db
def test_a_pair_decided_with_only_its_authors_label_is_left_out_of_the_leave_one_out():
    dataset = factories.dataset("calibrated-author-only")
    (alone,) = pairs_of(dataset, [[E]])
    adjudicate(alone, E)
    annotator = endpoint_annotator(dataset)
    answer(annotator, alone, E)

    figures = calibrate(annotator).figures

    assert (figures["gold_pairs"], figures["accuracy"]) == (1, 1.0)
    assert figures["leave_one_out"] == {"items": 0}  # no validator's label: no pair to score the model on
    assert figures["dawid_skene"] == {}


@pytest.mark.django_db
def test_a_model_that_answered_no_gold_pair_has_no_leave_one_out_or_dawid_skene_figures():
    dataset = factories.dataset("calibrated-no-answer")
    first, second = pairs_of(dataset, [[E, E, E], [N, N, N]])
    annotator = endpoint_annotator(dataset)
    answer(annotator, first, "", outcome="failed")
    answer(annotator, second, "", outcome="unparseable")

    figures = calibrate(annotator).figures

    assert figures["answered_gold_pairs"] == 0
    assert (figures["leave_one_out"], figures["dawid_skene"]) == ({"items": 0}, {})


@pytest.mark.django_db
def test_two_gold_pairs_are_fitted_and_a_human_who_labels_as_the_model_is_not_below_it(make_worker):
    dataset = factories.dataset("calibrated-two")
    first, second = pairs_of(dataset, [[E, E, E, N], [N, N, N, N]], validators=[make_worker() for _ in range(3)])
    annotator = endpoint_annotator(dataset)
    answer(annotator, first, E)
    answer(annotator, second, N)

    figures = rounded(calibrate(annotator).figures)

    assert figures["leave_one_out"] == {"items": 2, "agreement": 1.0, "chance": 0.5, "human_median": None}
    assert figures["dawid_skene"] == {
        "skill": 1.0,
        "skill_meaning": "P(gives the true label), averaged over the fitted prior of true labels",
        "confusion": {E: {E: 1.0, N: 0.0}, N: {E: 0.0, N: 1.0}},
        "humans_below": 3,  # the two authors, who saw one class each, and the third validator
        "humans": 5,  # the first two validators label as the model does: level with it, not below
    }


@pytest.mark.django_db
def test_the_humans_median_is_the_upper_middle_of_the_validators_with_twenty_leave_one_out_items(make_worker):
    dataset = factories.dataset("calibrated-twenty")
    golds = [E, N, C, E, N] * 4
    steady, loose = make_worker(), make_worker()
    # The fourth label is an anonymous worker's: one item, too few to count among the humans.
    labels = [[gold, gold, OTHER[gold] if index % 4 == 0 else gold, gold] for index, gold in enumerate(golds)]
    pairs = pairs_of(dataset, labels, validators=[steady, loose])
    annotator = endpoint_annotator(dataset)
    for pair, gold in zip(pairs, golds, strict=True):
        answer(annotator, pair, gold)

    figures = rounded(calibrate(annotator).figures)

    # Each validator has exactly twenty leave-one-out items, the loose one's agreement 0.75 and the
    # steady one's 1.0: of two, the median is the upper.
    assert figures["leave_one_out"] == {"items": 20, "agreement": 1.0, "chance": 0.36, "human_median": 1.0}
