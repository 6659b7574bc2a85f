"""Model annotators on the researchers' pages: calibrated beside the workers, their label and
reason on the adjudication queue only where a study turned that help on; triage's order."""

import pytest
from django.urls import reverse

from corpus.models import Label
from crowd.models import Study, TaskKind
from model_annotators import services
from model_annotators.calibration import calibrate
from model_annotators.models import AnnotatorKind, ModelAnnotator, ModelLabel, PromptVersion
from tests import factories

from .conftest import gold_pairs
from .test_mutants_admin import admin_form_fields


def endpoint_annotator(dataset, name="judge-llm"):
    annotator = ModelAnnotator.objects.create(
        name=name, dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")
    return annotator


def study_of(dataset):
    return Study.objects.create(
        slug=f"s-{dataset.slug}", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="C"
    )


@pytest.mark.django_db
def test_the_workers_page_shows_each_model_calibrated_beside_the_workers(client, researcher):
    dataset = factories.dataset("shown")
    pairs = gold_pairs(dataset, [Label.ENTAILMENT, Label.NEUTRAL])
    annotator = endpoint_annotator(dataset)
    ModelLabel.objects.create(
        annotator=annotator, pair=pairs[0], asked_with="validation-v1", outcome="labelled", label="entailment"
    )
    ModelLabel.objects.create(annotator=annotator, pair=pairs[1], asked_with="validation-v1", outcome="unparseable")
    calibrate(annotator)
    client.force_login(researcher)

    html = client.get(reverse("dashboard:workers")).content.decode()

    assert 'id="table-model-annotators"' in html and "judge-llm" in html
    assert '<td class="num" data-stat="accuracy">0.500</td>' in html


@pytest.mark.django_db
def test_the_adjudication_queue_shows_the_model_only_where_a_study_asked(client, researcher):
    dataset = factories.dataset("adjudicated")
    genre = factories.genre("fiction")
    split = factories.pair(
        dataset, factories.premise(dataset, genre), ["entailment", "entailment", "neutral", "neutral", "contradiction"]
    )
    annotator = endpoint_annotator(dataset)
    ModelLabel.objects.create(
        annotator=annotator,
        pair=split,
        asked_with="validation-v1",
        outcome="labelled",
        label="neutral",
        reason="Walking is not said to be slow.",
    )
    client.force_login(researcher)
    url = reverse("dashboard:adjudication")
    assert "Walking is not said to be slow." not in client.get(url).content.decode()  # off by default

    services.set_model_use(study_of(dataset), adjudication_help=True)

    html = client.get(url).content.decode()
    assert 'data-stat="model-hint"' in html and "Walking is not said to be slow." in html


@pytest.mark.django_db
def test_a_study_takes_models_of_its_own_dataset_only():
    """Triage is off by default; what it does to the claim order: test_triage_claims.py."""
    dataset = factories.dataset("triaged")
    annotator = endpoint_annotator(dataset)
    study = study_of(dataset)
    assert services.set_model_use(study).triage_annotator is None

    assert services.set_model_use(study, triage_annotator=annotator).triage_annotator == annotator
    other = endpoint_annotator(factories.dataset("elsewhere"), name="other")
    with pytest.raises(Exception, match="another dataset"):
        services.set_model_use(study, vote_annotator=other)


@pytest.mark.django_db
def test_a_worker_reaches_neither_page(client, make_worker):
    worker = make_worker()
    client.force_login(worker.user)
    assert client.get(reverse("dashboard:workers")).status_code == 403
    assert client.get(reverse("dashboard:adjudication")).status_code == 403


@pytest.mark.django_db
def test_a_researcher_registers_an_endpoint_in_the_admin_and_its_key_is_sealed(client, researcher):
    dataset = factories.dataset("admin-registered")
    client.force_login(researcher)
    response = client.post(
        reverse("admin:model_annotators_modelannotator_add"),
        # loopback: allow-listed by the conftest
        admin_form_fields(dataset, model_name="llama-3-8b-instruct", api_key="sk-lab-secret-123"),
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    annotator = ModelAnnotator.objects.get(name="lab vllm")
    assert annotator.sealed_api_key and "sk-lab-secret-123" not in annotator.sealed_api_key
    assert set(annotator.prompts.values_list("task_kind", "version")) == {
        ("validation", 1),
        ("mpe", 1),
        ("two_way", 1),
        ("writing", 1),
    }
    page = client.get(reverse("admin:model_annotators_modelannotator_change", args=[annotator.pk])).content.decode()
    assert "sk-lab-secret-123" not in page and annotator.sealed_api_key not in page
    for name in ("labellingjob", "modellabel", "calibration", "modeluse"):
        assert client.get(reverse(f"admin:model_annotators_{name}_changelist")).status_code == 200
