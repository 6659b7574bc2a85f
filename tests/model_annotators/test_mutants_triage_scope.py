"""What a model annotator is asked and measured on, and a study's triage at its edges: the error
of an annotator without a prompt names the kind it lacks; its calibration pairs are its dataset's
gold pairs and catch trials (not other reference answers), less the train split of a snapshot a
run was trained on when that snapshot held the dataset; a study's triage is its own, known after
one read (two statements, the use with its model and dataset joined, and the prompt) and then from
the cache at no statement, whether on, off or without a prompt; and a new prompt version of the
triage model reorders every study that triages with it at once."""

import pytest

from corpus.models import Label, Pair, Split
from crowd.models import Study, TaskKind
from model_annotators import services
from model_annotators.models import AnnotatorKind, ModelAnnotator, PromptVersion
from model_annotators.scope import CannotLabel, asked_with, calibration_pairs
from model_annotators.triage import triage_of
from modeling.models import RunStatus, Snapshot, TrainingRun
from quality.models import ReferenceLabel
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db

E = Label.ENTAILMENT


def endpoint(dataset, name="m", *, prompt_versions=(1,)) -> ModelAnnotator:
    annotator = ModelAnnotator.objects.create(
        name=name, dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name=name
    )
    for version in prompt_versions:
        PromptVersion.objects.create(
            annotator=annotator, task_kind="validation", version=version, system="s", template="t"
        )
    return annotator


def study_of(dataset, slug) -> Study:
    return Study.objects.create(
        slug=slug, name=slug, dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )


def gold_pair(dataset, gold=E, split=Split.DEV) -> Pair:
    pair = make_pair(dataset, label=E, split=split)
    Pair.objects.filter(pk=pair.pk).update(gold_label=gold)
    return pair


# --- scope ---------------------------------------------------------------------------------------


def test_an_annotator_without_a_prompt_of_the_kind_says_which_kind_it_lacks():
    annotator = endpoint(make_dataset("no-prompt"), prompt_versions=())
    with pytest.raises(CannotLabel, match=r"^the annotator has no validation prompt$"):
        asked_with(annotator)
    with pytest.raises(CannotLabel, match=r"^the annotator has no writing prompt$"):
        asked_with(annotator, "writing")
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=3, system="s", template="t")
    assert asked_with(annotator) == "validation-v3"


def test_calibration_pairs_are_the_datasets_gold_pairs_and_catch_trials_not_other_reference_answers():
    dataset = make_dataset("calibrated-on")
    annotator = endpoint(dataset)
    with_gold = gold_pair(dataset)
    without_gold = gold_pair(dataset, gold="-")
    catch = gold_pair(dataset, gold="-")
    ReferenceLabel.objects.create(pair=catch, label=E, is_catch_trial=True)
    answered_only = gold_pair(dataset, gold="-")
    ReferenceLabel.objects.create(pair=answered_only, label=E, is_catch_trial=False)
    gold_pair(make_dataset("another-dataset"))

    chosen = set(calibration_pairs(annotator).values_list("pk", flat=True))
    assert chosen == {with_gold.pk, catch.pk}
    assert without_gold.pk not in chosen


@pytest.mark.parametrize(
    ("snapshot_datasets", "train_measured"),
    [
        ([], False),  # a snapshot of every dataset held this one
        (["own"], False),
        (["elsewhere"], True),  # trained on another dataset: this one's train pairs are unseen
    ],
)
def test_a_run_is_measured_on_train_pairs_only_when_its_snapshot_did_not_hold_the_dataset(
    snapshot_datasets, train_measured
):
    dataset = make_dataset("own")
    make_dataset("elsewhere")
    snapshot = Snapshot.objects.create(datasets=snapshot_datasets)
    run = TrainingRun.objects.create(snapshot=snapshot, snapshot_hash="h", model="cbow", status=RunStatus.DONE)
    annotator = ModelAnnotator.objects.create(name="run", dataset=dataset, kind=AnnotatorKind.RUN, training_run=run)
    train, dev = gold_pair(dataset, split=Split.TRAIN), gold_pair(dataset, split=Split.DEV)
    expected = {train.pk, dev.pk} if train_measured else {dev.pk}
    assert set(calibration_pairs(annotator).values_list("pk", flat=True)) == expected


# --- triage --------------------------------------------------------------------------------------


def test_a_studys_triage_is_its_own():
    dataset = make_dataset("triage-own")
    annotator = endpoint(dataset)
    triaged, untriaged, other_use = (study_of(dataset, f"triage-own-{n}") for n in range(3))
    services.set_model_use(triaged, triage_annotator=annotator)
    services.set_model_use(other_use, vote_annotator=annotator)

    assert triage_of(triaged) == (annotator.pk, "validation-v1")
    assert triage_of(untriaged) is None
    assert triage_of(other_use) is None
    assert triage_of(triaged) == (annotator.pk, "validation-v1")


def test_a_cold_triage_is_two_statements_and_a_known_one_none(django_assert_num_queries):
    dataset = make_dataset("triage-statements")
    annotator = endpoint(dataset)
    on, off = study_of(dataset, "triage-statements-on"), study_of(dataset, "triage-statements-off")
    services.set_model_use(on, triage_annotator=annotator)
    # The use with its model and the model's dataset in one statement, then the current prompt.
    with django_assert_num_queries(2):
        assert triage_of(on) == (annotator.pk, "validation-v1")
    with django_assert_num_queries(1):
        assert triage_of(off) is None
    with django_assert_num_queries(0):
        assert triage_of(on) == (annotator.pk, "validation-v1")
        assert triage_of(off) is None


def test_a_triage_model_without_a_prompt_orders_nothing_and_is_not_asked_again(django_assert_num_queries):
    dataset = make_dataset("triage-no-prompt")
    annotator = endpoint(dataset, prompt_versions=())
    study = study_of(dataset, "triage-no-prompt")
    services.set_model_use(study, triage_annotator=annotator)
    assert triage_of(study) is None
    with django_assert_num_queries(0):
        assert triage_of(study) is None


def test_a_new_prompt_version_reorders_every_study_that_triages_with_its_model_at_once():
    dataset = make_dataset("triage-new-prompt")
    annotator, other = endpoint(dataset, "triager"), endpoint(dataset, "other")
    studies = [study_of(dataset, f"triage-new-prompt-{n}") for n in range(4)]
    services.set_model_use(studies[1], triage_annotator=other)
    services.set_model_use(studies[2], triage_annotator=annotator)
    services.set_model_use(studies[3], triage_annotator=annotator)
    assert [triage_of(study) for study in studies[2:]] == [(annotator.pk, "validation-v1")] * 2

    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=2, system="s", template="t")

    assert [triage_of(study) for study in studies[2:]] == [(annotator.pk, "validation-v2")] * 2
    assert triage_of(studies[1]) == (other.pk, "validation-v1")
