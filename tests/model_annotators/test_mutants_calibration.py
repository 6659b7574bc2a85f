"""model_annotators/calibration.py at the edges mutmut found unguarded: a calibration's figures
whole, on labels whose every figure is known (no pair without gold counted, only this annotator's
labels under its current prompt), and Cohen's κ on its own."""

from decimal import Decimal

import pytest

from corpus.models import Label, ValidationLabel
from model_annotators.calibration import calibrate, cohen_kappa
from model_annotators.models import ModelAnnotator, ModelLabel
from quality.models import ReferenceLabel
from tests import factories

from .test_pages_and_uses import endpoint_annotator

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
OTHER = {E: N, N: C, C: E}
ASKED_WITH = "validation-v1"  # the endpoint annotator's current prompt


def rounded(value):
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    return value


def labelled(annotator, pair, label, *, asked_with=ASKED_WITH, outcome="labelled", **fields):
    return ModelLabel.objects.create(
        annotator=annotator, pair=pair, asked_with=asked_with, outcome=outcome, label=label, **fields
    )


@pytest.mark.django_db
def test_a_calibration_scores_only_pairs_with_human_gold_on_this_annotators_current_labels(make_worker):
    """24 pairs with human gold (four named validators, one of them on 20), a catch trial without
    gold, a pair that is neither; the model wrong on four, unparseable on one, failed on one. The
    pair without gold counts among the answers and the catch trials, never in the gold figures; an
    earlier prompt's label, another annotator's and a label on a pair outside the split, nowhere."""
    dataset = factories.dataset("calibrated-edges")
    genre = factories.genre("fiction")
    v1, v2, v3, v4 = (make_worker() for _ in range(4))
    golds = [E, N, C] * 8
    pairs = []
    for index, gold in enumerate(golds):
        # v1 always agrees, v2 never, v3 on three pairs in four, v4 on all but three of its twenty.
        third = OTHER[gold] if index % 4 == 0 else gold
        fourth = OTHER[gold] if index % 8 == 2 else gold
        validators = [v1, v2, v3, v4] if index < 20 else [v1, v2, v3]
        labels = [gold, gold, OTHER[gold], third, fourth]
        pairs.append(factories.pair(dataset, factories.premise(dataset, genre), labels, validators=validators))
    split = factories.pair(dataset, factories.premise(dataset, genre), [E, E, N, N, C])  # no gold
    unasked = factories.pair(dataset, factories.premise(dataset, genre), [E, E, N, N, C])
    ReferenceLabel.objects.create(pair=split, label=N, is_catch_trial=True)
    ReferenceLabel.objects.create(pair=pairs[1], label=N, is_catch_trial=True)
    ReferenceLabel.objects.create(pair=pairs[4], label=E)  # a researcher's answer, not a catch trial
    # A label that does not count (its worker was excluded): in no figure.
    ValidationLabel.objects.create(pair=pairs[10], worker=make_worker(), position=6, label=E, excluded=True)
    annotator = endpoint_annotator(dataset)
    ModelAnnotator.objects.filter(pk=annotator.pk).update(
        price_per_million_input_tokens=Decimal("2.5"), price_per_million_output_tokens=Decimal("10"), currency="EUR"
    )
    annotator.refresh_from_db()
    said = list(golds)
    said[0], said[1], said[2], said[5] = N, C, E, E
    for index, (pair, label) in enumerate(zip(pairs, said, strict=True)):
        outcome = {7: "unparseable", 8: "failed"}.get(index, "labelled")
        labelled(
            annotator,
            pair,
            label if outcome == "labelled" else "",
            outcome=outcome,
            latency_ms=100 * (index + 1),
            input_tokens=1000 + index,
            output_tokens=10 * index,
        )
    labelled(annotator, split, N, latency_ms=500, input_tokens=900, output_tokens=20)
    labelled(annotator, unasked, C)  # not a calibration pair: neither gold nor a catch trial
    labelled(annotator, pairs[3], C, asked_with="validation-v0")  # an earlier prompt's
    other = endpoint_annotator(dataset, name="another-llm")
    labelled(other, pairs[9], N)
    labelled(other, split, E)

    calibration = calibrate(annotator)

    assert (calibration.pairs, calibration.accuracy, calibration.asked_with) == (24, 0.75, ASKED_WITH)
    assert rounded(calibration.figures) == {
        "asked_with": ASKED_WITH,
        "answers": 25,
        "outcomes": {"labelled": 23, "unparseable": 1, "failed": 1},
        "gold_pairs": 24,
        "answered_gold_pairs": 22,
        "accuracy": 0.75,  # 18 right of 24: an unanswered pair counts as wrong
        "kappa": 0.725857,
        "alpha": 0.731669,
        "per_class": {
            C: {"precision": 0.833333, "recall": 0.625, "support": 8},
            E: {"precision": 0.777778, "recall": 0.875, "support": 8},
            N: {"precision": 0.857143, "recall": 0.75, "support": 8},
        },
        "confusion": {
            C: {C: 5, E: 2, N: 0},
            E: {C: 0, E: 7, N: 1},
            N: {C: 1, E: 0, N: 6},
        },
        "catch_trials": {"answered": 2, "matched": 1, "share": 0.5},
        "leave_one_out": {"items": 22, "agreement": 0.818182, "chance": 0.336777, "human_median": 0.727273},
        "dawid_skene": {
            "skill": 0.815476,
            "skill_meaning": "P(gives the true label), averaged over the fitted prior of true labels",
            "confusion": {
                C: {C: 0.7143, E: 0.2857, N: 0.0},
                E: {C: 0.0, E: 0.875, N: 0.125},
                N: {C: 0.1429, E: 0.0, N: 0.8571},
            },
            "humans_below": 30,
            "humans": 32,  # 24 authors, 4 anonymous fifth labels, 4 validators
        },
        # (25,176 tokens in at 2.5 + 2,780 out at 10 a million) / 25 labels, a thousand labels' worth
        "per_thousand": {"cost": 3.6296, "currency": "EUR", "seconds": 1220.0, "labels_per_thousand_asked": 920.0},
    }


@pytest.mark.django_db
def test_a_class_the_model_never_said_has_no_precision_and_one_without_gold_no_recall():
    dataset = factories.dataset("calibrated-classes")
    genre = factories.genre("fiction")
    first, second, unanswered = (factories.pair(dataset, factories.premise(dataset, genre), [E] * 5) for _ in range(3))
    ReferenceLabel.objects.create(pair=unanswered, label=E, is_catch_trial=True)  # not answered: not scored
    annotator = endpoint_annotator(dataset)
    labelled(annotator, first, N)
    labelled(annotator, second, "", outcome="unparseable")

    figures = calibrate(annotator).figures

    assert figures["per_class"] == {
        E: {"precision": None, "recall": 0.0, "support": 2},
        N: {"precision": 0.0, "recall": None, "support": 0},
    }
    assert (figures["accuracy"], figures["catch_trials"]) == (0.0, {"answered": 0, "matched": 0, "share": None})


@pytest.mark.django_db
def test_a_calibration_with_no_answered_gold_pair_has_no_accuracy_kappa_or_alpha():
    dataset = factories.dataset("calibrated-unanswered")
    genre = factories.genre("fiction")
    pair = factories.pair(dataset, factories.premise(dataset, genre), [E] * 5)
    annotator = endpoint_annotator(dataset)
    labelled(annotator, pair, "", outcome="failed")

    calibration = calibrate(annotator)

    assert calibration.accuracy == 0.0 and calibration.pairs == 1  # the failed answer counts as wrong
    assert (calibration.figures["kappa"], calibration.figures["alpha"]) == (None, None)

    ModelLabel.objects.all().delete()
    calibration = calibrate(annotator)

    assert (calibration.pairs, calibration.accuracy, calibration.figures["gold_pairs"]) == (0, None, 0)
    assert calibration.figures["per_thousand"] == {} and calibration.figures["dawid_skene"] == {}


def test_cohen_kappa_of_two_raters_over_the_same_items():
    # observed 2/4, expected (2·1 + 1·3 + 1·0) / 16
    assert cohen_kappa([E, E, N, C], [E, N, N, N]) == pytest.approx((0.5 - 5 / 16) / (1 - 5 / 16))
    assert cohen_kappa([], []) is None
    assert cohen_kappa([E, E], [E, E]) is None  # one label only: agreement by chance is certain
    with pytest.raises(ValueError):
        cohen_kappa([E, N], [E])
