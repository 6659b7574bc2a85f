"""A real trained run of the platform labels pairs it never saw, and is measured like a person:
catch trials, leave-one-out agreement, Dawid–Skene, κ and α against human gold, per class."""

import pytest

from base.long_tasks import JobStatus
from corpus.labels import NO_GOLD
from corpus.models import Label, Pair, Split
from model_annotators import services
from model_annotators.calibration import calibrate
from model_annotators.models import LabellingJob, ModelLabel
from model_annotators.vote import vote_standing
from modeling.models import RunStatus
from modeling.training.services import execute_training_run, launch_training_run
from quality.models import ReferenceLabel
from tests import factories
from tests.modeling.training_fixtures import make_snapshot, multinli_splits

from .conftest import gold_pairs

CUES = {Label.ENTAILMENT: "indeed", Label.NEUTRAL: "perhaps", Label.CONTRADICTION: "never"}


@pytest.fixture
def trained_run(db, tmp_path, settings):
    settings.DATA_DIR = str(tmp_path / "data")
    snapshot = make_snapshot(tmp_path / "snap", multinli_splits(n_train=600, n_eval=60))
    run = launch_training_run(
        snapshot,
        "cbow",
        config={"embedding_dim": 16, "hidden_dim": 16, "epochs": 4, "patience": 4, "lr": 0.01, "cpu_threads": 1},
        enqueue=False,
    )
    execute_training_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.DONE, run.error
    return run


def cue_pairs(dataset, golds, split=Split.DEV):
    return gold_pairs(dataset, golds, split=split, hypotheses=[f"{CUES[gold]} a person walks a dog" for gold in golds])


@pytest.mark.django_db
def test_a_trained_run_labels_unseen_pairs_and_is_calibrated_like_a_person(
    trained_run, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("run-labelled")
    golds = [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION] * 10
    unseen = cue_pairs(dataset, golds)
    seen = cue_pairs(dataset, [Label.ENTAILMENT] * 3, split=Split.TRAIN)  # the run's train split: never calibration
    catch = unseen[0]
    ReferenceLabel.objects.create(pair=catch, label=Label.ENTAILMENT, is_catch_trial=True)
    gold_before = dict(Pair.objects.values_list("pk", "gold_label"))
    annotator = services.register_run(dataset, trained_run)

    with django_capture_on_commit_callbacks(execute=True):
        job = services.start_labelling(annotator)
    job = LabellingJob.objects.get(pk=job.pk)

    assert job.status == JobStatus.DONE, job.error
    labelled = set(ModelLabel.objects.filter(annotator=annotator).values_list("pair_id", flat=True))
    assert labelled == {pair.pk for pair in unseen} and not labelled & {pair.pk for pair in seen}
    calibration = annotator.calibrations.get()
    figures = calibration.figures
    assert calibration.pairs == 30 and calibration.asked_with == f"run-{trained_run.pk}"
    assert calibration.accuracy is not None and calibration.accuracy > 0.9  # the cue words are learnable
    assert figures["kappa"] > 0.8 and figures["alpha"] > 0.8
    assert set(figures["per_class"]) == set(Label.values)
    assert sum(sum(row.values()) for row in figures["confusion"].values()) == 30
    assert figures["catch_trials"] == {"answered": 1, "matched": 1, "share": 1.0}
    assert figures["leave_one_out"]["items"] == 30 and figures["leave_one_out"]["agreement"] > 0.9
    assert figures["dawid_skene"]["skill"] > 0.8 and figures["dawid_skene"]["humans"] > 0
    assert figures["per_thousand"]["cost"] == 0.0
    # The model's labels moved no gold label.
    assert dict(Pair.objects.values_list("pk", "gold_label")) == gold_before


@pytest.mark.django_db
def test_accuracy_counts_an_unanswered_pair_as_wrong_and_the_vote_needs_the_threshold(trained_run):
    dataset = factories.dataset("gated")
    pairs = cue_pairs(dataset, [Label.ENTAILMENT] * 4)
    annotator = services.register_run(dataset, trained_run)
    key = f"run-{trained_run.pk}"
    for pair in pairs[:3]:
        ModelLabel.objects.create(
            annotator=annotator, pair=pair, asked_with=key, outcome="labelled", label="entailment"
        )
    ModelLabel.objects.create(annotator=annotator, pair=pairs[3], asked_with=key, outcome="unparseable")
    study = factories_study(dataset)
    use = services.set_model_use(study, vote_annotator=annotator, vote_min_accuracy=0.7, vote_min_calibration_pairs=4)
    assert not vote_standing(use).allowed  # not calibrated yet

    calibration = calibrate(annotator)

    assert calibration.accuracy == 0.75 and calibration.figures["answered_gold_pairs"] == 3
    assert vote_standing(use).allowed
    use = services.set_model_use(study, vote_min_accuracy=0.8)
    assert not vote_standing(use).allowed and "below" in vote_standing(use).why
    use = services.set_model_use(study, vote_min_accuracy=0.7, vote_min_calibration_pairs=5)
    assert not vote_standing(use).allowed and "fewer than 5" in vote_standing(use).why
    assert Pair.objects.exclude(gold_label=NO_GOLD).count() == 4


def factories_study(dataset):
    from crowd.models import Study, TaskKind

    return Study.objects.create(
        slug=f"study-{dataset.slug}", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )


def test_the_vote_rule_stops_on_two_humans_and_the_model():
    from model_annotators.vote import replay_with_model, vote_stop

    assert vote_stop(["neutral", "neutral"], "neutral")
    assert not vote_stop(["neutral", "entailment"], "neutral")
    assert not vote_stop(["neutral", "neutral"], None)  # no answer, no vote
    assert replay_with_model(["neutral", "neutral", "entailment", "entailment", "entailment"], "neutral") == (
        2,
        "neutral",
        True,
    )  # the five-label gold was entailment: the vote changed it
    assert replay_with_model(["neutral", "entailment", "entailment", "entailment", "neutral"], "neutral") == (
        4,
        "entailment",
        False,
    )
