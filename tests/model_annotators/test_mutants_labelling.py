"""A labelling job at its edges, against the stand-in server (a real local HTTP process): a job
labels at most its limit, lowest pairs first, and a later job of the same annotator and prompt only
the pairs still unlabelled (another annotator's labels never count as done), while a new prompt
version labels every pair again; the calibration scope takes only pairs with a human gold, the "all"
scope every split of the annotator's dataset and no other dataset; more pairs than one chunk are all
labelled with the progress at its end; a job with nothing left is done at progress 1; a job that
cannot label fails with the reason, its end time, a log line with its id and traceback, and no
calibration. A job beats its heartbeat while it works; only a labels job (never a writing-checks
one) calibrates the annotator. A writing-checks job likewise asks only what its annotator has not
checked under its current writing prompt, lowest pairs first, and never a pair without the
writer's label."""

import logging

import pytest

from base.long_tasks import JobStatus
from corpus.models import Label, Pair, Split
from model_annotators import services
from model_annotators.labelling import CHUNK, pairs_to_label
from model_annotators.models import (
    JobTask,
    LabellingJob,
    ModelAnnotator,
    ModelLabel,
    PromptVersion,
    TaskKind,
    WritingCheck,
)
from model_annotators.scope import asked_with, current_prompt
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


def checked(annotator, key: str | None = None) -> list[int]:
    rows = WritingCheck.objects.filter(annotator=annotator)
    if key is not None:
        rows = rows.filter(asked_with=key)
    return sorted(rows.values_list("pair_id", flat=True))


def moved_to_the_end(pair: Pair) -> None:
    """Rewrite the pair's row, so that the table holds it after the others: only an explicit order
    then returns it first."""
    Pair.objects.filter(pk=pair.pk).update(hypothesis=pair.hypothesis + " ")


@pytest.mark.django_db
def test_a_new_labels_prompt_version_labels_every_pair_again(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("relabelled")
    pairs = gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())
    assert job_of(annotator, django_capture_on_commit_callbacks).pairs_total == 2
    first = current_prompt(annotator)
    assert first is not None
    services.new_prompt_version(annotator, first.task_kind, system=first.system + " Again.", template=first.template)

    again = job_of(annotator, django_capture_on_commit_callbacks)

    assert (again.pairs_total, again.pairs_done) == (2, 2)
    new_key = asked_with(annotator)
    assert new_key != f"{first.task_kind}-v{first.version}"
    assert sorted(
        ModelLabel.objects.filter(annotator=annotator, asked_with=new_key).values_list("pair_id", flat=True)
    ) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_writing_checks_job_run_twice_asks_only_what_is_left_lowest_first(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("checked-twice")
    pairs = gold_pairs(dataset, [E, N, C])
    moved_to_the_end(pairs[0])
    annotator = register(dataset, stand_in())

    first = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS, limit=2)

    assert (first.status, first.pairs_total, first.pairs_done) == (JobStatus.DONE, 2, 2), first.error
    assert checked(annotator) == sorted(pair.pk for pair in pairs)[:2]

    second = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (second.status, second.pairs_total, second.pairs_done) == (JobStatus.DONE, 1, 1), second.error
    assert checked(annotator) == sorted(pair.pk for pair in pairs)
    third = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)
    assert third.pairs_total == 0


@pytest.mark.django_db
def test_the_pairs_to_check_come_lowest_first(stand_in):
    dataset = factories.dataset("checked-in-order")
    pairs = gold_pairs(dataset, [E, N, C])
    moved_to_the_end(pairs[0])
    annotator = register(dataset, stand_in())
    services.start_labelling(annotator, scope="all", task=JobTask.WRITING_CHECKS)
    job = LabellingJob(annotator=annotator, scope="all", task=JobTask.WRITING_CHECKS)

    todo = pairs_to_label(job, asked_with(annotator, TaskKind.WRITING))

    assert list(todo.values_list("pk", flat=True)) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_writing_checks_job_never_asks_a_pair_without_the_writers_label(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("unwritten")
    with_label, without_label = gold_pairs(dataset, [E, N])
    Pair.objects.filter(pk=without_label.pk).update(author_label="")
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (job.pairs_total, job.pairs_done) == (1, 1), job.error
    assert checked(annotator) == [with_label.pk]


@pytest.mark.django_db
def test_another_annotators_writing_checks_are_not_its_own(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("checked-by-two")
    pairs = gold_pairs(dataset, [E, N])
    server = stand_in()
    first = register(dataset, server)
    job_of(first, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)
    other = register(dataset, server, name="another llm")

    job = job_of(other, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (job.pairs_total, job.pairs_done) == (2, 2), job.error
    assert checked(other) == checked(first) == sorted(pair.pk for pair in pairs)


@pytest.mark.django_db
def test_a_new_writing_prompt_version_checks_every_pair_again(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("checked-again")
    pairs = gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())
    job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)
    first = current_prompt(annotator, TaskKind.WRITING)
    assert first is not None
    services.new_prompt_version(annotator, TaskKind.WRITING, system=first.system + " Again.", template=first.template)

    again = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert (again.pairs_total, again.pairs_done) == (2, 2), again.error
    every = sorted(pair.pk for pair in pairs)
    assert checked(annotator, "writing-v1") == checked(annotator, "writing-v2") == every


@pytest.mark.django_db
def test_the_calibration_scope_takes_only_pairs_with_a_human_gold_and_the_all_scope_the_rest(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("gold-or-not")
    (with_gold,) = gold_pairs(dataset, [E])
    unvalidated = factories.pair(dataset, factories.premise(dataset, factories.genre("fiction")), [N])
    annotator = register(dataset, stand_in())

    calibration = job_of(annotator, django_capture_on_commit_callbacks)

    assert (calibration.pairs_total, labelled(annotator)) == (1, [with_gold.pk])

    every = job_of(annotator, django_capture_on_commit_callbacks, scope="all")

    assert every.pairs_total == 1
    assert labelled(annotator) == sorted([with_gold.pk, unvalidated.pk])


@pytest.mark.django_db
def test_a_labels_job_calibrates_the_annotator_and_a_writing_checks_job_does_not(
    stand_in, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("calibrated-or-not")
    gold_pairs(dataset, [E, N])
    annotator = register(dataset, stand_in())

    writing = job_of(annotator, django_capture_on_commit_callbacks, scope="all", task=JobTask.WRITING_CHECKS)

    assert writing.status == JobStatus.DONE and not annotator.calibrations.exists()

    labels = job_of(annotator, django_capture_on_commit_callbacks)

    assert labels.status == JobStatus.DONE and annotator.calibrations.count() == 1


@pytest.mark.django_db
def test_a_running_job_stamps_its_heartbeat_so_the_reaper_leaves_it(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("beating")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())

    job = job_of(annotator, django_capture_on_commit_callbacks)

    # Taking the job stamps both with one time; the work's own heartbeat comes after.
    assert job.status == JobStatus.DONE and job.started_at is not None and job.heartbeat_at is not None
    assert job.heartbeat_at > job.started_at


@pytest.mark.django_db
def test_a_failed_job_is_logged_with_its_id_and_the_traceback(stand_in, django_capture_on_commit_callbacks, caplog):
    dataset = factories.dataset("logged")
    gold_pairs(dataset, [E])
    annotator = register(dataset, stand_in())
    PromptVersion.objects.filter(annotator=annotator).delete()

    with caplog.at_level(logging.ERROR, logger="model_annotators.labelling"):
        job = job_of(annotator, django_capture_on_commit_callbacks)

    failures = [record for record in caplog.records if record.name == "model_annotators.labelling"]
    assert [(record.levelno, record.getMessage()) for record in failures] == [
        (logging.ERROR, f"labelling job {job.pk} failed")
    ]
    assert failures[0].exc_info is not None
