"""An OpenAI-compatible endpoint labels pairs as a worker of its own kind, against the stand-in
server (a real local HTTP process): sealed key, versioned prompts, strict parsing, retries."""

import pytest
from django.core.exceptions import ValidationError

from base.long_tasks import JobStatus
from corpus.models import Label, ValidationLabel, Worker
from model_annotators import services
from model_annotators.models import LabellingJob, ModelLabel, Outcome
from tests import factories

from .conftest import API_KEY, answer, gold_pairs


def register(dataset, server, **fields):
    return services.register_endpoint(
        dataset,
        name="stand-in llm",
        base_url=server.url,
        model_name="standin-7b",
        temperature=0.0,
        api_key=fields.pop("api_key", API_KEY),
        requests_per_minute=6000,
        **fields,
    )


def label_now(annotator, django_capture_on_commit_callbacks, scope="calibration"):
    with django_capture_on_commit_callbacks(execute=True):
        job = services.start_labelling(annotator, scope=scope)
    return LabellingJob.objects.get(pk=job.pk)


@pytest.mark.django_db
def test_an_endpoint_labels_the_calibration_split_in_a_table_of_its_own(
    stand_in, django_capture_on_commit_callbacks, settings
):
    settings.MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS = 0.05
    dataset = factories.dataset("llm-data")
    right, wrong, prose, rate_limited = gold_pairs(
        dataset,
        [Label.ENTAILMENT, Label.CONTRADICTION, Label.NEUTRAL, Label.NEUTRAL],
        hypotheses=["A dog is outside.", "Nobody is walking.", "The dog is old.", "The dog is hungry."],
    )
    server = stand_in(
        {
            "A dog is outside.": answer("entailment"),
            "Nobody is walking.": answer("neutral"),
            "The dog is old.": "I think it is neutral.",  # prose, not the JSON object asked for
            "The dog is hungry.": {"status": 429, "times": 2, "then": answer("neutral", "Hunger is not said.")},
        }
    )
    annotator = register(dataset, server)
    human_labels = ValidationLabel.objects.count()
    workers = Worker.objects.count()

    job = label_now(annotator, django_capture_on_commit_callbacks)

    assert job.status == JobStatus.DONE, job.error
    assert (job.pairs_total, job.pairs_done, job.progress) == (4, 4, 1.0)
    labels = {row.pair_id: row for row in ModelLabel.objects.filter(annotator=annotator)}
    assert labels[right.pk].label == "entailment" and labels[right.pk].reason == "Because the premise says so."
    assert labels[wrong.pk].label == "neutral"
    assert labels[prose.pk].outcome == Outcome.UNPARSEABLE and labels[prose.pk].label == ""
    assert labels[prose.pk].raw_answer == "I think it is neutral."  # recorded as it came, never guessed
    assert labels[rate_limited.pk].outcome == Outcome.LABELLED and labels[rate_limited.pk].attempts == 3
    assert {row.asked_with for row in labels.values()} == {"validation-v1"}
    # Never a crowd id, never a human label: no Worker, no ValidationLabel, gold untouched.
    assert Worker.objects.count() == workers and ValidationLabel.objects.count() == human_labels
    assert server.stats()["asked"][-1] == {"model": "standin-7b", "temperature": 0.0}


@pytest.mark.django_db
def test_the_key_is_sealed_and_a_wrong_key_is_a_failed_answer_not_a_label(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("sealed")
    gold_pairs(dataset, [Label.ENTAILMENT])
    server = stand_in()
    sealed = register(dataset, server)
    assert API_KEY not in sealed.sealed_api_key and sealed.sealed_api_key
    wrong = register(dataset, server, api_key="not-the-key")

    job = label_now(wrong, django_capture_on_commit_callbacks)

    (row,) = ModelLabel.objects.filter(annotator=wrong)
    assert job.status == JobStatus.DONE
    assert row.outcome == Outcome.FAILED and row.label == "" and "HTTP 401" in row.error
    assert row.attempts == 1  # a refusal is not retried


@pytest.mark.django_db
def test_a_server_that_keeps_failing_is_retried_then_recorded_as_failed(
    stand_in, django_capture_on_commit_callbacks, settings
):
    settings.MODEL_ANNOTATOR_RETRY_WAIT_MAX_SECONDS = 0.01
    dataset = factories.dataset("down")
    gold_pairs(dataset, [Label.NEUTRAL, Label.NEUTRAL], hypotheses=["Always down.", "Not a completion."])
    server = stand_in({"Always down.": {"status": 500}, "Not a completion.": {"envelope": "broken"}})
    annotator = register(dataset, server, max_retries=2)

    label_now(annotator, django_capture_on_commit_callbacks)

    rows = {row.raw_answer or row.error: row for row in ModelLabel.objects.filter(annotator=annotator)}
    assert rows["the endpoint answered HTTP 500"].attempts == 3
    assert rows["the endpoint's answer is not a chat completion"].outcome == Outcome.FAILED
    assert server.stats()["seen"]["Always down."] == 3


@pytest.mark.django_db
def test_a_new_prompt_version_labels_again_and_keeps_the_old_answers(stand_in, django_capture_on_commit_callbacks):
    dataset = factories.dataset("versions")
    gold_pairs(dataset, [Label.ENTAILMENT])
    annotator = register(dataset, stand_in())
    label_now(annotator, django_capture_on_commit_callbacks)
    with pytest.raises(ValidationError):
        services.new_prompt_version(annotator, "validation", system="s", template="no fields")
    services.new_prompt_version(
        annotator, "validation", system="Answer in JSON.", template="P: {premise}\nHypothesis: {hypothesis}"
    )

    label_now(annotator, django_capture_on_commit_callbacks)

    assert sorted(ModelLabel.objects.filter(annotator=annotator).values_list("asked_with", flat=True)) == [
        "validation-v1",
        "validation-v2",
    ]


def test_answers_are_parsed_strictly():
    from model_annotators.prompts import parse_answer

    assert parse_answer('{"label": "entailment", "reason": "x"}', "validation").label == "entailment"
    assert parse_answer(' {"label": "contradiction"} \n', "validation").label == "contradiction"
    for text in (
        'Sure! {"label": "entailment"}',
        '{"label": "Entailment"}',
        '{"label": "entailed"}',
        '```json\n{"label": "neutral"}\n```',
        '{"reason": "no label"}',
        "[1, 2]",
        "",
    ):
        assert parse_answer(text, "validation").label == "", text
    assert parse_answer('{"label": "not-entailed"}', "two_way").label == "neutral"  # stored as corpus.labels does
    assert parse_answer('{"label": "neutral"}', "two_way").label == ""
