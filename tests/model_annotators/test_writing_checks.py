"""Writing checks, off by default: a model judges whether each written hypothesis is
nonsense or does not fit its intended label. Stored per pair, never as a label (no gold moves);
shown to researchers beside the typing evidence, never to participants. An endpoint answers a
versioned prompt (against the STAND-IN server, bench/openai_stand_in.py, a real local HTTP process
that runs no model); a trained run's "does not fit" is its label against the intended one."""

import json

import pytest
from django.urls import reverse

from base.long_tasks import JobStatus
from corpus.models import Label, Pair, ValidationLabel
from crowd.models import Study, TaskKind
from model_annotators import services
from model_annotators.models import JobTask, LabellingJob, ModelLabel, Outcome, Verdict, WritingCheck
from model_annotators.writing_checks import checks_by_writer, checks_of_pairs
from tests import factories
from tests.present import present

from .conftest import API_KEY
from .test_run_annotator_calibration import CUES, trained_run  # noqa: F401  (the fixture)

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def verdict(word, reason="Said plainly."):
    return json.dumps({"verdict": word, "reason": reason})


def written(dataset, items, writer=None):
    """Pairs as a writer made them: (hypothesis, intended label), the writer's label only."""
    genre = factories.genre("fiction")
    return [
        factories.pair(dataset, factories.premise(dataset, genre), [label], hypothesis=hypothesis, author=writer)
        for hypothesis, label in items
    ]


def check_now(annotator, django_capture_on_commit_callbacks, scope="all"):
    with django_capture_on_commit_callbacks(execute=True):
        job = services.start_labelling(annotator, scope=scope, task=JobTask.WRITING_CHECKS)
    return LabellingJob.objects.get(pk=job.pk)


def study_of(dataset):
    return Study.objects.create(
        slug=f"s-{dataset.slug}", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )


@pytest.mark.django_db
def test_an_endpoint_checks_the_writing_with_a_versioned_prompt_and_researchers_see_it(
    stand_in, django_capture_on_commit_callbacks, client, researcher, settings
):
    settings.MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS = 0.05
    dataset = factories.dataset("checked-writing")
    fits, wrong_label, nonsense, prose = written(
        dataset,
        [
            ("A dog is outside.", E),
            ("The dog is asleep indoors.", E),
            ("Purple the of sleeps dog.", N),
            ("The dog is old.", C),
        ],
    )
    server = stand_in(
        {
            "A dog is outside.": verdict("fits"),
            "The dog is asleep indoors.": verdict("does-not-fit", "The premise has the dog outside."),
            "Purple the of sleeps dog.": verdict("nonsense", "Not an English sentence."),
            "The dog is old.": "It fits, I think.",  # prose: unparseable, never guessed
        }
    )
    annotator = services.register_endpoint(
        dataset,
        name="checker",
        base_url=server.url,
        model_name="standin-7b",
        api_key=API_KEY,
        requests_per_minute=6000,
    )
    gold_before = dict(Pair.objects.values_list("pk", "gold_label"))
    human_labels = ValidationLabel.objects.count()

    job = check_now(annotator, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.DONE and job.pairs_done == 4, job.error
    rows = {row.pair_id: row for row in WritingCheck.objects.filter(annotator=annotator)}
    assert {pk: (rows[pk].outcome, rows[pk].verdict) for pk in rows} == {
        fits.pk: (Outcome.LABELLED, Verdict.FITS),
        wrong_label.pk: (Outcome.LABELLED, Verdict.DOES_NOT_FIT),
        nonsense.pk: (Outcome.LABELLED, Verdict.NONSENSE),
        prose.pk: (Outcome.UNPARSEABLE, ""),
    }
    assert rows[wrong_label.pk].asked_with == "writing-v1" and rows[wrong_label.pk].intended_label == E
    assert rows[prose.pk].raw_answer == "It fits, I think."
    assert sum(server.stats()["seen"].values()) == 4  # one request a pair
    assert annotator.prompts.filter(task_kind="writing", version=1).exists()
    # Not a label: no model label, no human label, no gold moved.
    assert not ModelLabel.objects.exists() and ValidationLabel.objects.count() == human_labels
    assert dict(Pair.objects.values_list("pk", "gold_label")) == gold_before
    # A new prompt version is checked anew; the first version's checks stay.
    services.new_prompt_version(
        annotator,
        "writing",
        system="s",
        template="Premise: {premise}\nIntended label: {label}\nHypothesis: {hypothesis}\n",
    )
    job = check_now(annotator, django_capture_on_commit_callbacks)
    assert job.pairs_total == 4 and WritingCheck.objects.filter(asked_with="writing-v2").count() == 4
    assert WritingCheck.objects.filter(asked_with="writing-v1").count() == 4

    # Off by default: no page shows them until a study turns them on.
    client.force_login(researcher)
    url = reverse("dashboard:pairs") + f"?dataset={dataset.slug}"
    assert checks_of_pairs(list(Pair.objects.values_list("pk", "dataset_id"))) == {}
    assert 'data-stat="writing-check"' not in client.get(url).content.decode()

    services.set_model_use(study_of(dataset), writing_checks_annotator=annotator)

    html = client.get(url).content.decode()
    assert 'data-stat="writing-check"' in html and 'data-verdict="nonsense"' in html
    assert checks_of_pairs([(nonsense.pk, nonsense.dataset_id)])[nonsense.pk][0]["asked_with"] == "writing-v2"


@pytest.mark.django_db
def test_a_trained_run_says_does_not_fit_when_its_label_is_not_the_intended_one(
    trained_run,  # noqa: F811
    django_capture_on_commit_callbacks,
    make_worker,
):
    dataset = factories.dataset("run-checked")
    writer = make_worker()
    fitting, misfit = written(
        dataset, [(f"{CUES[E]} a person walks a dog", E), (f"{CUES[E]} a person walks a dog today", C)], writer
    )
    annotator = services.register_run(dataset, trained_run)

    job = check_now(annotator, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.DONE, job.error
    rows = {row.pair_id: row for row in WritingCheck.objects.filter(annotator=annotator)}
    assert (rows[fitting.pk].verdict, rows[fitting.pk].model_label) == (Verdict.FITS, E)
    assert (rows[misfit.pk].verdict, rows[misfit.pk].model_label, rows[misfit.pk].intended_label) == (
        Verdict.DOES_NOT_FIT,
        E,
        C,
    )
    assert 1 / 3 < present(rows[misfit.pk].probability) <= 1.0
    assert not annotator.calibrations.exists()  # a writing check is no calibration
    study = study_of(dataset)
    services.set_model_use(study, writing_checks_annotator=annotator)
    assert checks_by_writer([writer.pk]) == {writer.pk: {"checked": 2, "flagged": 1}}


@pytest.mark.django_db
def test_participants_never_see_a_writing_check(client, make_worker):
    worker = make_worker()
    client.force_login(worker.user)
    assert client.get(reverse("dashboard:pairs")).status_code == 403
    assert client.get(reverse("dashboard:workers")).status_code == 403
