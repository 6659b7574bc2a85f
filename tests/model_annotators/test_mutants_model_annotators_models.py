"""The model annotators' models as the admin and the audit log show them to a researcher
(model_annotators/models.py): an annotator by its name, kind and dataset, a prompt by task and
version, a model's label (or, without one, its outcome), a labelling job, a calibration, a study's
model uses and a writing check (its verdict, or its outcome before one)."""

import pytest

from model_annotators.models import (
    Calibration,
    LabellingJob,
    ModelAnnotator,
    ModelLabel,
    ModelUse,
    PromptVersion,
    WritingCheck,
)

pytestmark = pytest.mark.django_db


def test_an_annotator_and_its_prompt_read_as_a_researcher_names_them() -> None:
    assert (
        str(ModelAnnotator(name="roberta-mnli", kind="endpoint", dataset_id=4)) == "model roberta-mnli (endpoint) on 4"
    )
    assert str(PromptVersion(task_kind="validation", version=3)) == "validation v3"


def test_a_models_label_reads_as_its_label_or_else_its_outcome() -> None:
    assert str(ModelLabel(annotator_id=2, pair_id=9, label="neutral", outcome="labelled")) == "2 on 9: neutral"
    assert str(ModelLabel(annotator_id=2, pair_id=9, label="", outcome="unparseable")) == "2 on 9: unparseable"


def test_a_writing_check_reads_as_its_verdict_or_else_its_outcome() -> None:
    answered = WritingCheck(pair_id=5, annotator_id=2, verdict="fits", outcome="labelled")
    assert str(answered) == "writing check of 5 by 2: fits"
    unanswered = WritingCheck(pair_id=5, annotator_id=2, verdict="", outcome="failed")
    assert str(unanswered) == "writing check of 5 by 2: failed"


def test_the_jobs_calibrations_and_uses_read_as_a_researcher_names_them() -> None:
    assert str(LabellingJob(pk=7, annotator_id=2, status="running")) == "labelling job 7 of 2 (running)"
    assert str(Calibration(annotator_id=2, pairs=200)) == "calibration of 2 on 200 pairs"
    assert str(ModelUse(study_id=6)) == "model uses of study 6"
