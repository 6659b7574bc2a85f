"""The model's vote live: a calibrated model that passes the study's threshold stops a pair on the
decided rule once two human labels agree with it; otherwise the pair takes its human labels."""

import pytest

from corpus.models import Adjudication, AdjudicationSource, Label, Split, StoppingPolicy, StoppingRule
from crowd.models import Study, TaskKind
from model_annotators import services
from model_annotators.models import AnnotatorKind, Calibration, ModelAnnotator, ModelLabel, PromptVersion
from modeling.datasheet import datasheet_markdown, snapshot_provenance
from teams.models import default_team_id
from tests.validation.test_stopping import claim_and_submit
from tests.validation.validation_factories import make_dataset, make_pair

E, N = Label.ENTAILMENT, Label.NEUTRAL


def _composition_lines(manifest):
    return datasheet_markdown(manifest, {}, {}, {}, quality_flags=False, dropped_columns=()).splitlines()


def withdraw(pair):
    from corpus.adjudication import adjudicate
    from corpus.models import AdjudicationAction

    adjudicate(pair, "", reason="a researcher looked again", action=AdjudicationAction.WITHDRAW)


def voting_setup(slug, *, accuracy, rule=StoppingRule.DECIDED):
    dataset = make_dataset(slug)
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=rule)
    annotator = ModelAnnotator.objects.create(
        name="voter", dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")
    Calibration.objects.create(annotator=annotator, asked_with="validation-v1", pairs=500, accuracy=accuracy)
    study = Study.objects.create(
        slug=f"s-{slug}", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )
    return dataset, annotator, study


@pytest.mark.django_db
def test_two_humans_and_a_calibrated_model_stop_a_pair_and_decide_its_gold(make_worker):
    dataset, annotator, study = voting_setup("voted", accuracy=0.97)
    pair = make_pair(dataset, label=E)
    ModelLabel.objects.create(annotator=annotator, pair=pair, asked_with="validation-v1", outcome="labelled", label=E)
    services.set_model_use(study, vote_annotator=annotator, vote_min_accuracy=0.95)

    claim_and_submit(make_worker(), E)

    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early, pair.needs_validation, pair.gold_label) == (2, True, False, E)
    decision = Adjudication.objects.get(pair=pair)
    assert decision.source == AdjudicationSource.MODEL_VOTE and "voter" in decision.reason
    # A release made from a snapshot of these pairs says which pairs a model's vote decided.
    assert snapshot_provenance([dataset.slug], {}, upper_id=pair.pk)["model_vote_pairs"] == [pair.pair_id]
    card = "\n".join(_composition_lines({"provenance": snapshot_provenance([dataset.slug], {}, upper_id=pair.pk)}))
    assert "a model's vote decided" in card
    withdraw(pair)
    assert "model_vote_pairs" not in snapshot_provenance([dataset.slug], {}, upper_id=pair.pk)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("accuracy", "rule", "model_label", "vote_on"),
    [
        (0.90, StoppingRule.DECIDED, E, True),  # below the threshold: no vote
        (0.97, StoppingRule.FIXED, E, True),  # the fixed rule takes five labels
        (0.97, StoppingRule.DECIDED, N, True),  # the model disagrees with the two humans
        (0.97, StoppingRule.DECIDED, E, False),  # the vote is off (the default)
    ],
)
def test_without_an_earned_agreeing_vote_the_pair_takes_its_human_labels(
    make_worker, accuracy, rule, model_label, vote_on
):
    dataset, annotator, study = voting_setup(
        f"novote-{accuracy}-{rule}-{model_label}-{vote_on}", accuracy=accuracy, rule=rule
    )
    pair = make_pair(dataset, label=E)
    ModelLabel.objects.create(
        annotator=annotator, pair=pair, asked_with="validation-v1", outcome="labelled", label=model_label
    )
    if vote_on:
        services.set_model_use(study, vote_annotator=annotator, vote_min_accuracy=0.95)

    claim_and_submit(make_worker(), E)

    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early, pair.needs_validation) == (2, False, True)
    assert not Adjudication.objects.filter(pair=pair).exists()


@pytest.mark.django_db
def test_a_pair_the_vote_stopped_takes_labels_again_when_one_of_its_human_labels_is_excluded(make_worker):
    from corpus.exclusions import set_workers_excluded
    from corpus.models import AdjudicationAction, Worker

    dataset, annotator, study = voting_setup("requeued", accuracy=0.97)
    pair = make_pair(dataset, label=E)
    ModelLabel.objects.create(annotator=annotator, pair=pair, asked_with="validation-v1", outcome="labelled", label=E)
    services.set_model_use(study, vote_annotator=annotator, vote_min_accuracy=0.95)
    agreeing = make_worker()
    claim_and_submit(agreeing, E)
    pair.refresh_from_db()
    assert (pair.stopped_early, pair.needs_validation, pair.gold_label) == (True, False, E)

    set_workers_excluded(Worker.objects.filter(pk=agreeing.pk), True, teams=[default_team_id()])

    # One human label is left beside the model's: the vote no longer stands, the pair needs labels
    # again, and its gold is the rule's again ("-": one label of five).
    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early, pair.needs_validation) == (1, False, True)
    assert (pair.gold_label, pair.adjudicated_label) == ("-", "")
    decisions = list(Adjudication.objects.filter(pair=pair).order_by("pk").values_list("action", "source"))
    assert decisions == [
        (AdjudicationAction.LABEL, AdjudicationSource.MODEL_VOTE),
        (AdjudicationAction.WITHDRAW, AdjudicationSource.MODEL_VOTE),
    ]
    # A new validator agreeing with the writer and the model stops it again, by the vote.
    claim_and_submit(make_worker(), E)
    pair.refresh_from_db()
    assert (pair.label_count, pair.stopped_early, pair.needs_validation, pair.gold_label) == (2, True, False, E)
    assert Adjudication.objects.filter(pair=pair).count() == 3
