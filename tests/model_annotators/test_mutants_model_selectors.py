"""The model annotators' reads for the researchers' pages (model_annotators/selectors.py) at the
edges: each annotator of the scope comes once, by dataset, name and then age, with its latest
calibration and that calibration's figures (each group empty where the calibration has none, all
empty without a calibration), its dataset and run read in the same query; and the adjudication
queue's hints are, for pairs of datasets where a study turned that help on only, each annotator's
latest answered label of the pair (the later row of two made at once), never an unanswered one."""

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import Max
from django.utils import timezone

from corpus.models import Dataset, Label, Pair
from corpus.scope import Scope
from crowd.models import Study, TaskKind
from model_annotators.models import AnnotatorKind, Calibration, ModelAnnotator, ModelLabel, ModelUse, Outcome
from model_annotators.selectors import adjudication_hints, calibration_rows
from modeling.models import RunStatus, Snapshot, TrainingRun
from tests import factories

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION

FIGURES = {
    "leave_one_out": {"accuracy": 0.8},
    "dawid_skene": {"accuracy": 0.7},
    "catch_trials": {"passed": 3},
    "per_thousand": {"cost": 1.5},
    "outcomes": {"labelled": 9},
    "accuracy": 0.75,
}


def annotator_of(dataset: Dataset, name: str, **fields: Any) -> ModelAnnotator:
    values: dict[str, Any] = {"kind": AnnotatorKind.ENDPOINT, "base_url": "http://127.0.0.1:9/v1", "model_name": "m"}
    return ModelAnnotator.objects.create(name=name, dataset=dataset, **(values | fields))


def study_of(dataset: Dataset) -> Study:
    return Study.objects.create(
        slug=f"s-{dataset.slug}", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )


def one_pair(dataset: Dataset) -> Pair:
    return factories.pair(dataset, factories.premise(dataset, factories.genre("fiction")), [E])


def label(annotator: ModelAnnotator, pair: Pair, asked_with: str, **fields: Any) -> ModelLabel:
    values: dict[str, Any] = {"outcome": Outcome.LABELLED, "label": E, "reason": ""}
    return ModelLabel.objects.create(annotator=annotator, pair=pair, asked_with=asked_with, **(values | fields))


# --- calibration rows -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_each_annotator_comes_by_dataset_name_and_age_with_its_latest_calibrations_figures(
    django_assert_num_queries: Callable[..., Any],
) -> None:
    first, second = factories.dataset("calibrated-first"), factories.dataset("calibrated-second")
    run = TrainingRun.objects.create(
        snapshot=Snapshot.objects.create(datasets=[first.slug]), snapshot_hash="h", model="cbow", status=RunStatus.DONE
    )
    zeta = annotator_of(first, "zeta", kind=AnnotatorKind.RUN, base_url="", model_name="", training_run=run)
    beta = annotator_of(first, "beta")
    alpha = annotator_of(second, "alpha")
    older = Calibration.objects.create(annotator=zeta, asked_with="run-1", figures={"accuracy": 0.1})
    latest = Calibration.objects.create(annotator=zeta, asked_with="run-1", figures=FIGURES)
    Calibration.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=1))
    sparse = Calibration.objects.create(annotator=alpha, asked_with="validation-v1", figures={"accuracy": 0.5})

    rows = calibration_rows(Scope.everything())

    assert [row["annotator"] for row in rows] == [beta, zeta, alpha]
    with django_assert_num_queries(0):  # each row's dataset and run came with it
        assert [(row["annotator"].dataset.slug, row["annotator"].training_run) for row in rows] == [
            (first.slug, None),
            (first.slug, run),
            (second.slug, None),
        ]
    empty: dict[str, dict[str, Any]] = {"loo": {}, "ds": {}, "catch": {}, "per_thousand": {}, "outcomes": {}}
    assert [{key: value for key, value in row.items() if key != "annotator"} for row in rows] == [
        {"calibration": None, "figures": {}} | empty,
        {
            "calibration": latest,
            "figures": FIGURES,
            "loo": {"accuracy": 0.8},
            "ds": {"accuracy": 0.7},
            "catch": {"passed": 3},
            "per_thousand": {"cost": 1.5},
            "outcomes": {"labelled": 9},
        },
        {"calibration": sparse, "figures": {"accuracy": 0.5}} | empty,
    ]


@pytest.mark.django_db
def test_a_datasets_scope_shows_its_own_annotators_and_of_one_name_the_older_first() -> None:
    dataset, other = factories.dataset("scoped-calibrations"), factories.dataset("not-scoped")
    annotator_of(other, "aaa")
    top = ModelAnnotator.objects.aggregate(top=Max("pk"))["top"]
    # The younger row stored first: only the row's age orders two of one name.
    younger = annotator_of(dataset, "same", pk=top + 1000)
    older = annotator_of(dataset, "same", pk=top + 500)

    rows = calibration_rows(Scope.of_dataset(dataset))

    assert [row["annotator"] for row in rows] == [older, younger]


# --- adjudication hints -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_queue_hints_each_annotators_latest_answered_label_where_a_study_asked() -> None:
    helped, unhelped = factories.dataset("hinted"), factories.dataset("not-hinted")
    ModelUse.objects.create(study=study_of(helped), adjudication_help=True)
    ModelUse.objects.create(study=study_of(unhelped), adjudication_help=False)
    first, second = annotator_of(helped, "first-judge"), annotator_of(helped, "second-judge")
    outsider = annotator_of(unhelped, "outsider")
    split, tied, not_asked = one_pair(helped), one_pair(helped), one_pair(helped)
    quiet = one_pair(unhelped)

    latest = label(first, split, "validation-v1", label=N, reason="The premise hedges.")
    older = label(first, split, "validation-v2", label=C, reason="Older, stored later.")
    ModelLabel.objects.filter(pk=older.pk).update(created_at=timezone.now() - timedelta(days=1))
    label(second, split, "validation-v1", label=C, reason="Says no.")
    label(second, split, "validation-v2", outcome=Outcome.UNPARSEABLE, label="")  # the latest: no answer
    earlier = label(first, tied, "validation-v1", label=E, reason="tie, stored first")
    later = label(first, tied, "validation-v2", label=N, reason="tie, stored second")
    # One moment for both, the later row's set last (stored after the earlier one's).
    ModelLabel.objects.filter(pk=later.pk).update(created_at=earlier.created_at)
    label(first, not_asked, "validation-v1")
    label(outsider, quiet, "validation-v1")

    hints = adjudication_hints(iter([split, tied, quiet]))

    assert hints == {
        split.pk: [
            {"model": "first-judge", "label": N, "reason": "The premise hedges."},
            {"model": "second-judge", "label": C, "reason": "Says no."},
        ],
        tied.pk: [{"model": "first-judge", "label": N, "reason": "tie, stored second"}],
    }
    assert latest.pk < older.pk


@pytest.mark.django_db
def test_no_study_asking_for_help_gives_no_hints() -> None:
    dataset = factories.dataset("unhelped-alone")
    ModelUse.objects.create(study=study_of(dataset))
    pair = one_pair(dataset)
    label(annotator_of(dataset, "judge"), pair, "validation-v1")

    assert adjudication_hints([pair]) == {}
