"""The admin's pages of the model annotators at the edges mutmut found unguarded: the deadline of
one request taken from 1 to 300 s inclusive and stored as typed, the registering user and the
default prompts (their texts) of a new endpoint only, one audit entry per save that changed
something (who, what, which team and dataset, why, the values as plain JSON), the prompts shown but
never added here, and labelling jobs, labels and calibrations never added or changed in the admin."""

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from audit.models import AuditEntry
from corpus.models import Dataset
from model_annotators.models import AnnotatorKind, LabellingJob, ModelAnnotator, PromptVersion
from model_annotators.prompts import DEFAULT_PROMPTS
from tests import factories

pytestmark = pytest.mark.django_db

ADD = "admin:model_annotators_modelannotator_add"
CHANGE = "admin:model_annotators_modelannotator_change"


def admin_form_fields(dataset: Dataset, **changed: str) -> dict[str, Any]:
    """The admin form of an endpoint annotator, as a browser posts it."""
    return {
        "name": "lab vllm",
        "dataset": dataset.pk,
        "kind": "endpoint",
        "base_url": "http://localhost:8000/v1",
        "model_name": "llama",
        "temperature": "0.0",
        "requests_per_minute": "60",
        "max_retries": "3",
        "timeout_seconds": "30",
        "price_per_million_input_tokens": "0",
        "price_per_million_output_tokens": "0",
        "currency": "USD",
        "api_key": "",
        "prompts-TOTAL_FORMS": "0",
        "prompts-INITIAL_FORMS": "0",
        **changed,
    }


def _endpoint(dataset: Dataset) -> ModelAnnotator:
    """An endpoint annotator registered elsewhere (by no one), with its validation prompt only."""
    annotator = ModelAnnotator.objects.create(
        name="lab vllm",
        dataset=dataset,
        kind=AnnotatorKind.ENDPOINT,
        base_url="http://localhost:8000/v1",
        model_name="llama",
        sealed_api_key="sealed-before",
    )
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")
    return annotator


def test_an_endpoint_registered_in_the_admin_keeps_its_user_its_default_prompts_and_one_full_entry(
    client: Client, researcher: User
) -> None:
    """Fails if the admin forgets who registered an endpoint, makes its prompts without the default
    texts, or writes its entry without actor, subject, team, dataset, reason or plain JSON values."""
    dataset = factories.dataset("admin-registers")
    client.force_login(researcher)
    fields = admin_form_fields(
        dataset,
        temperature="0.5",
        timeout_seconds="300",
        price_per_million_input_tokens="1.5",
        api_key="sk-registered",
    )

    response = client.post(reverse(ADD), fields)

    assert response.status_code == 302, response.content.decode()[:2000]
    annotator = ModelAnnotator.objects.get()
    assert annotator.created_by == researcher
    assert annotator.timeout_seconds == 300.0
    prompts = {(p.task_kind, p.version, p.system, p.template) for p in annotator.prompts.all()}
    assert prompts == {(kind, 1, system, template) for kind, (system, template) in DEFAULT_PROMPTS.items()}
    entry = AuditEntry.objects.get()
    assert entry.action == "model_annotator.registered"
    assert (entry.actor, entry.actor_id) == (researcher.get_username(), researcher.pk)
    assert (entry.subject_type, entry.subject_id, entry.subject) == (
        "model_annotators.modelannotator",
        str(annotator.pk),
        "lab vllm",
    )
    assert entry.team_id == dataset.team_id
    assert entry.dataset_slugs == ["admin-registers"]
    assert entry.reason == "admin"
    assert entry.before == {}
    assert entry.after["dataset"] == dataset.pk
    assert entry.after["temperature"] == 0.5
    assert entry.after["timeout_seconds"] == 300.0
    assert entry.after["price_per_million_input_tokens"] == "1.5"
    assert entry.after["api_key"] is True


@pytest.mark.parametrize("seconds", ["1", "300"])
def test_the_deadline_of_one_request_may_be_1_or_300_seconds_and_is_stored_as_typed(
    client: Client, researcher: User, seconds: str
) -> None:
    """Fails if either end of the allowed deadline is refused, or the admin stores another deadline
    than the one typed."""
    dataset = factories.dataset("admin-deadline")
    client.force_login(researcher)

    response = client.post(reverse(ADD), admin_form_fields(dataset, timeout_seconds=seconds))

    assert response.status_code == 302, response.content.decode()[:2000]
    assert ModelAnnotator.objects.get().timeout_seconds == float(seconds)


@pytest.mark.parametrize("seconds", ["0.5", "300.5"])
def test_a_deadline_outside_1_to_300_seconds_is_refused_with_its_reason(
    client: Client, researcher: User, seconds: str
) -> None:
    """Fails if a deadline under 1 s or over 300 s is stored, or refused without saying the range."""
    dataset = factories.dataset("admin-deadline-refused")
    client.force_login(researcher)

    response = client.post(reverse(ADD), admin_form_fields(dataset, timeout_seconds=seconds))

    assert response.status_code == 200
    assert "The deadline of one request must be from 1 to 300 s." in response.content.decode()
    assert not ModelAnnotator.objects.exists()
    assert not AuditEntry.objects.exists()


def test_a_change_keeps_who_registered_the_endpoint_and_adds_no_prompt(client: Client, researcher: User) -> None:
    """Fails if changing an annotator in the admin makes the changer its registrant, or gives an
    existing endpoint the default prompts it did not have."""
    dataset = factories.dataset("admin-changes")
    annotator = _endpoint(dataset)
    client.force_login(researcher)

    response = client.post(reverse(CHANGE, args=[annotator.pk]), admin_form_fields(dataset, model_name="llama-2"))

    assert response.status_code == 302, response.content.decode()[:2000]
    annotator.refresh_from_db()
    assert annotator.model_name == "llama-2" and annotator.created_by is None
    assert list(annotator.prompts.values_list("task_kind", "system")) == [("validation", "s")]
    entry = AuditEntry.objects.get()
    assert entry.action == "model_annotator.changed"
    assert (entry.before, entry.after) == ({"model_name": "llama"}, {"model_name": "llama-2", "api_key": False})


def test_a_save_that_changes_nothing_leaves_no_entry_and_a_new_key_alone_leaves_one(
    client: Client, researcher: User
) -> None:
    """Fails if an unchanged save is logged, or a replaced key (and nothing else) is not."""
    dataset = factories.dataset("admin-keys")
    annotator = _endpoint(dataset)
    client.force_login(researcher)
    change = reverse(CHANGE, args=[annotator.pk])

    assert client.post(change, admin_form_fields(dataset)).status_code == 302
    assert not AuditEntry.objects.exists()

    assert client.post(change, admin_form_fields(dataset, api_key="sk-replaced")).status_code == 302
    annotator.refresh_from_db()
    assert annotator.sealed_api_key not in ("", "sealed-before")
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.before, entry.after) == ("model_annotator.changed", {}, {"api_key": True})


def test_the_prompts_are_shown_on_the_annotators_page_but_no_new_one_is_offered(
    client: Client, researcher: User
) -> None:
    """Fails if the admin offers a form for a new prompt version beside the versions it shows
    (a new version goes through model_annotators.services.new_prompt_version)."""
    annotator = _endpoint(factories.dataset("admin-prompts"))
    client.force_login(researcher)

    html = client.get(reverse(CHANGE, args=[annotator.pk])).content.decode()

    assert 'id="prompts-0"' in html
    assert 'id="prompts-empty"' not in html


@pytest.mark.parametrize("name", ["labellingjob", "modellabel", "calibration"])
def test_the_records_of_labelling_are_never_added_in_the_admin(client: Client, researcher: User, name: str) -> None:
    """Fails if the admin lets even a superuser add a labelling job, a model's label or a calibration."""
    client.force_login(researcher)

    assert client.get(reverse(f"admin:model_annotators_{name}_add")).status_code == 403


def test_a_labelling_job_is_shown_but_never_changed_in_the_admin(client: Client, researcher: User) -> None:
    """Fails if the admin lets even a superuser change a labelling job's record."""
    job = LabellingJob.objects.create(annotator=_endpoint(factories.dataset("admin-jobs")), pairs_total=4)
    client.force_login(researcher)
    url = reverse("admin:model_annotators_labellingjob_change", args=[job.pk])

    assert client.get(url).status_code == 200
    assert client.post(url, {"scope": "all", "status": "done", "pairs_total": "9"}).status_code == 403
    job.refresh_from_db()
    assert (job.scope, job.pairs_total) == ("calibration", 4)


def test_the_admin_action_queues_one_calibration_job_per_chosen_annotator_and_says_how_many(
    client: Client, researcher: User
) -> None:
    """Fails if the admin's action queues no job, one for an annotator not chosen, or a job of the
    wrong scope or user, or miscounts them (the action is decorated: no mutant measures it)."""
    dataset = factories.dataset("admin-action")
    chosen = [_endpoint(dataset), _endpoint(dataset)]
    _endpoint(dataset)  # not chosen
    client.force_login(researcher)

    response = client.post(
        reverse("admin:model_annotators_modelannotator_changelist"),
        {"action": "label_calibration_split", "_selected_action": [a.pk for a in chosen]},
        follow=True,
    )

    assert response.status_code == 200
    jobs = LabellingJob.objects.order_by("annotator_id")
    assert [(j.annotator_id, j.scope, j.created_by_id) for j in jobs] == [
        (a.pk, "calibration", researcher.pk) for a in chosen
    ]
    assert "2 labelling job(s) queued." in response.content.decode()
