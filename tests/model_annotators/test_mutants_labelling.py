"""A labelling job at its edges, against the stand-in server (a real local HTTP process): a job
labels at most its limit, lowest pairs first, and a later job of the same annotator and prompt only
the pairs still unlabelled (another annotator's labels never count as done); the "all" scope takes
every split of the annotator's dataset and no other dataset; more pairs than one chunk are all
labelled with the progress at its end; a job with nothing left is done at progress 1; and a job
that cannot label fails with the reason, its end time and no calibration."""

import pytest

from base.long_tasks import JobStatus
from corpus.models import Label, Split
from model_annotators import services
from model_annotators.labelling import CHUNK
from model_annotators.models import LabellingJob, ModelAnnotator, ModelLabel, PromptVersion
from tests import factories

from .conftest import API_KEY, StandInServer, gold_pairs

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def register(dataset, server: StandInServer, name: str = "stand-in llm") -> ModelAnnotator:
    return services.register_endpoint(
        dataset,
        name=name,
        base_url=server.url,
        model_name="standin-7b",
        api_key=API_KEY,
        requests_per_minute=0,  # unpaced: the stand-in answers at once
    )


def job_of(annotator, django_capture_on_commit_callbacks, **fields) -> LabellingJob:
    with django_capture_on_commit_callbacks(execute=True):
        job = services.start_labelling(annotator, **fields)
    return LabellingJob.objects.get(pk=job.pk)


def labelled(annotator) -> list[int]:
    return sorted(ModelLabel.objects.filter(annotator=annotator).values_list("pair_id", flat=True))


@pytest.mark.django_db
def test_a_job_labels_its_limit_lowest_first_and_the_next_job_only_the_rest(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("limited")
    pairs = gold_pairs(dataset, [E, N, C])
    server = stand_in()
    annotator = register(dataset, server)

    first = job_of(annotator, django_capture_on_commit_callbacks, limit=2)

    assert (first.status, first.pairs_total, first.pairs_done) == (JobStatus.DONE, 2, 2)
    assert labelled(annotator) == sorted(pair.pk for pair in pairs)[:2]

    second = job_of(annotator, django_capture_on_commit_callbacks)

    assert (second.pairs_total, second.pairs_done) == (1, 1)
    assert labelled(annotator) == sorted(pair.pk for pair in pairs)

    # Another annotator of the same dataset and prompt: the first one's labels are not its own.
    other = register(dataset, server, name="another llm")
    assert job_of(other, django_capture_on_commit_callbacks).pairs_total == 3


@pytest.mark.django_db
def test_a_job_with_nothing_left_is_done_at_full_progress(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("nothing-left")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())
    job_of(annotator, django_capture_on_commit_callbacks)

    again = job_of(annotator, django_capture_on_commit_callbacks)

    assert (again.status, again.stage, again.pairs_total, again.pairs_done) == (JobStatus.DONE, "done", 0, 0)
    assert again.progress == 1.0 and again.finished_at is not None and again.error == ""


@pytest.mark.django_db
def test_the_all_scope_takes_every_split_of_the_dataset_and_no_other_dataset(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("every-split")
    dev = gold_pairs(dataset, [E])
    train = gold_pairs(dataset, [N], split=Split.TRAIN)
    gold_pairs(factories.dataset("not-this-one"), [C])
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks, scope="all")

    assert job.pairs_total == 2
    assert labelled(annotator) == sorted([dev[0].pk, train[0].pk])


@pytest.mark.django_db
def test_more_pairs_than_one_chunk_are_all_labelled(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("chunks")
    pairs = gold_pairs(dataset, [E, N, C] * (CHUNK // 3 + 1))
    assert len(pairs) > CHUNK
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks)

    assert (job.status, job.pairs_total, job.pairs_done, job.progress) == (JobStatus.DONE, len(pairs), len(pairs), 1.0)
    assert labelled(annotator) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_job_that_cannot_label_fails_with_the_reason_and_no_calibration(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("no-prompt")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())
    PromptVersion.objects.filter(annotator=annotator).delete()

    job = job_of(annotator, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.FAILED and job.finished_at is not None
    assert job.error == "the annotator has no validation prompt"
    assert not ModelLabel.objects.filter(annotator=annotator).exists()
    assert not annotator.calibrations.exists()
