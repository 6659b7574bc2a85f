"""The model annotators' writes at their edges: which runs and endpoints a researcher may register
(a finished, re-measured run; an http(s) base URL without query, fragment or credentials that the
platform may reach; a named model; a temperature from 0 to 2; a study of the same dataset), what is
stored (the name, the stripped model name, the sealed key, the rates and prices, version 1 of every
default prompt), the next prompt version per task kind, a labelling job's scope and task and its
writing prompt, a study's uses (only known ones, only models of its dataset, a vote threshold from
0.5 to 1), and the audit entries each write leaves: who, what, which team and dataset, what changed,
and never the key itself."""

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError

from audit.models import AuditEntry
from base.long_tasks import JobStatus
from corpus.models import Dataset
from crowd.models import Study
from crowd.models import TaskKind as StudyTaskKind
from markets.sealing import unseal_text
from model_annotators import services
from model_annotators.models import (
    AnnotatorKind,
    JobTask,
    LabellingJob,
    ModelAnnotator,
    ModelUse,
    PromptVersion,
    TaskKind,
)
from model_annotators.prompts import DEFAULT_PROMPTS
from modeling.models import RunStatus, Snapshot, TrainingRun
from teams.models import Team
from tests import factories

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/v1"


def lab_dataset(slug: str) -> Dataset:
    team = Team.objects.create(slug=f"lab-{slug}", name=f"Lab {slug}")
    return factories.dataset(slug, team=team)


def study_of(dataset: Dataset, slug: str = "") -> Study:
    return Study.objects.create(
        slug=slug or f"s-{dataset.slug}",
        name="s",
        dataset=dataset,
        team=dataset.team,
        task_kind=StudyTaskKind.VALIDATION,
        completion_code="C",
    )


def fit_run(dataset: Dataset, **fields: Any) -> TrainingRun:
    snapshot = Snapshot.objects.create(datasets=[dataset.slug])
    values: dict[str, Any] = {
        "status": RunStatus.DONE,
        "checkpoint_name": "cbow-1.safetensors",
        "remeasured_accuracy": 0.6,
        **fields,
    }
    return TrainingRun.objects.create(snapshot=snapshot, snapshot_hash="h", model="cbow", **values)


def endpoint(dataset: Dataset, **fields: Any) -> ModelAnnotator:
    values: dict[str, Any] = {"name": "judge", "base_url": URL, "model_name": "m", **fields}
    return services.register_endpoint(dataset, **values)


def refusal(error: pytest.ExceptionInfo[ValidationError]) -> dict[str, list[str]]:
    return dict(error.value.message_dict)


# --- who made it ---------------------------------------------------------------------------------


def test_only_a_signed_in_user_is_kept_as_the_maker() -> None:
    user = User.objects.create_user(username="maker")
    assert services._user(user) == user
    assert services._user(AnonymousUser()) is None
    assert services._user(None) is None


# --- a training run ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"status": RunStatus.RUNNING},
        {"checkpoint_name": ""},
        {"remeasured_accuracy": None},
    ],
)
def test_a_run_not_finished_stored_and_remeasured_is_refused(fields: dict[str, Any]) -> None:
    dataset = lab_dataset("run-refused")
    with pytest.raises(ValidationError) as refused:
        services.register_run(dataset, fit_run(dataset, **fields))
    assert refused.value.messages == [
        "Only a finished training run with a stored checkpoint the platform has re-measured can label pairs."
    ]
    assert not ModelAnnotator.objects.exists() and not AuditEntry.objects.exists()


def test_a_registered_run_is_named_for_its_model_and_audited_in_its_team(django_user_model: type[User]) -> None:
    dataset = lab_dataset("run-registered")
    study = study_of(dataset)
    run = fit_run(dataset)
    user = django_user_model.objects.create_user(username="registrar")

    annotator = services.register_run(dataset, run, study=study, user=user)

    annotator.refresh_from_db()
    assert annotator.name == f"cbow run {run.pk}"
    assert annotator.kind == AnnotatorKind.RUN and annotator.training_run == run
    assert annotator.dataset == dataset and annotator.study == study and annotator.created_by == user
    entry = AuditEntry.objects.get()
    assert entry.action == "model_annotator.registered"
    assert entry.actor_id == user.pk and entry.actor == "registrar"
    assert entry.subject_type == "model_annotators.modelannotator" and entry.subject_id == str(annotator.pk)
    assert entry.subject == f"cbow run {run.pk}"
    assert entry.team_id == dataset.team_id
    assert entry.after == {"kind": "run", "dataset": "run-registered", "training_run": run.pk}
    assert entry.dataset_slugs == ["run-registered"]


def test_a_run_keeps_the_name_it_is_given_and_no_maker_without_a_user() -> None:
    dataset = lab_dataset("run-named")
    annotator = services.register_run(dataset, fit_run(dataset), name="our cbow", user=AnonymousUser())
    annotator.refresh_from_db()
    assert annotator.name == "our cbow" and annotator.created_by is None and annotator.study is None
    entry = AuditEntry.objects.get()
    assert entry.subject == "our cbow" and entry.actor_id is None


def test_a_run_for_a_study_of_another_dataset_is_refused() -> None:
    dataset = lab_dataset("run-own")
    other = study_of(lab_dataset("run-other"))
    with pytest.raises(ValidationError) as refused:
        services.register_run(dataset, fit_run(dataset), study=other)
    assert refusal(refused) == {"study": ["The study collects another dataset."]}
    assert not ModelAnnotator.objects.exists()


# --- an endpoint ---------------------------------------------------------------------------------


def test_a_registered_endpoint_stores_what_it_was_given_and_every_default_prompt(
    django_user_model: type[User],
) -> None:
    dataset = lab_dataset("endpoint-stored")
    study = study_of(dataset)
    user = django_user_model.objects.create_user(username="registrar")

    annotator = endpoint(
        dataset,
        name="judge-llm",
        model_name="  llama-3  ",
        temperature=0.7,
        api_key="sk-secret-1",
        study=study,
        requests_per_minute=12,
        max_retries=5,
        price_per_million_input_tokens=0.25,
        price_per_million_output_tokens=Decimal("1.5"),
        user=user,
    )

    annotator = ModelAnnotator.objects.get(pk=annotator.pk)
    assert annotator.name == "judge-llm" and annotator.kind == AnnotatorKind.ENDPOINT
    assert annotator.dataset == dataset and annotator.study == study and annotator.created_by == user
    assert annotator.base_url == URL and annotator.model_name == "llama-3" and annotator.temperature == 0.7
    assert unseal_text(annotator.sealed_api_key) == "sk-secret-1"
    assert annotator.requests_per_minute == 12 and annotator.max_retries == 5
    assert annotator.price_per_million_input_tokens == Decimal("0.25")
    assert annotator.price_per_million_output_tokens == Decimal("1.5")
    prompts = {
        prompt.task_kind: (prompt.version, prompt.system, prompt.template)
        for prompt in PromptVersion.objects.filter(annotator=annotator)
    }
    assert prompts == {kind: (1, system, template) for kind, (system, template) in DEFAULT_PROMPTS.items()}
    entry = AuditEntry.objects.get()
    assert entry.action == "model_annotator.registered" and entry.actor == "registrar"
    assert entry.subject == "judge-llm" and entry.team_id == dataset.team_id
    assert entry.after == {
        "kind": "endpoint",
        "dataset": "endpoint-stored",
        "base_url": URL,
        "model_name": "llama-3",
        "temperature": 0.7,
        "api_key": True,
    }
    assert "sk-secret-1" not in str(entry.after)
    assert entry.dataset_slugs == ["endpoint-stored"]


def test_an_endpoint_takes_the_defaults_and_logs_that_no_key_is_sealed() -> None:
    dataset = lab_dataset("endpoint-defaults")
    annotator = ModelAnnotator.objects.get(pk=endpoint(dataset).pk)
    assert annotator.temperature == 0.0 and annotator.study is None and annotator.created_by is None
    assert annotator.requests_per_minute == 60 and annotator.max_retries == 3
    assert annotator.price_per_million_input_tokens == 0 and annotator.price_per_million_output_tokens == 0
    assert unseal_text(annotator.sealed_api_key) == ""
    entry = AuditEntry.objects.get()
    assert entry.after["api_key"] is False and entry.after["temperature"] == 0.0


@pytest.mark.parametrize("temperature", [0.0, 2.0])
def test_the_temperature_bounds_are_inclusive(temperature: float) -> None:
    annotator = endpoint(lab_dataset(f"warm-{int(temperature)}"), temperature=temperature)
    assert ModelAnnotator.objects.get(pk=annotator.pk).temperature == temperature


@pytest.mark.parametrize("temperature", [-0.01, 2.01])
def test_a_temperature_outside_zero_to_two_is_refused(temperature: float) -> None:
    with pytest.raises(ValidationError) as refused:
        endpoint(lab_dataset("too-warm"), temperature=temperature)
    assert refusal(refused) == {"temperature": ["The temperature must be from 0 to 2."]}
    assert not ModelAnnotator.objects.exists()


@pytest.mark.parametrize("model_name", ["", "   "])
def test_an_endpoint_without_a_model_name_is_refused(model_name: str) -> None:
    with pytest.raises(ValidationError) as refused:
        endpoint(lab_dataset("nameless"), model_name=model_name)
    assert refusal(refused) == {"model_name": ["Name the model the endpoint serves."]}
    assert not ModelAnnotator.objects.exists()


def test_an_endpoint_for_a_study_of_another_dataset_is_refused() -> None:
    dataset = lab_dataset("endpoint-own")
    with pytest.raises(ValidationError) as refused:
        endpoint(dataset, study=study_of(lab_dataset("endpoint-other")))
    assert refusal(refused) == {"study": ["The study collects another dataset."]}
    assert not ModelAnnotator.objects.exists() and not PromptVersion.objects.exists()


def test_a_study_of_the_same_dataset_or_none_passes_the_check() -> None:
    dataset = lab_dataset("same")
    services._check_study(dataset, None)
    services._check_study(dataset, study_of(dataset))
    with pytest.raises(ValidationError):
        services._check_study(dataset, study_of(lab_dataset("not-same")))


# --- the base URL --------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/v1", "127.0.0.1:9/v1", "HTTP://127.0.0.1:9/v1", "xhttp://a/v1"])
def test_a_base_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        services.check_endpoint_url(url)
    assert refusal(refused) == {"base_url": ["The endpoint's base URL must start with http:// or https://."]}


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1?key=1", "http://127.0.0.1:9/v1#part"])
def test_a_base_url_with_a_query_or_fragment_is_refused(url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        services.check_endpoint_url(url)
    assert refusal(refused) == {"base_url": ["A base URL ends at its path (e.g. http://gpu-node:8000/v1): no ? or #."]}


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1", "https://127.0.0.1:9/v1"])
def test_an_allowed_http_or_https_base_url_passes(url: str) -> None:
    services.check_endpoint_url(url)


def test_a_base_url_the_platform_may_not_reach_is_refused_with_the_reason(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_NETWORKS = []
    with pytest.raises(ValidationError) as refused:
        endpoint(lab_dataset("inward"))
    (message,) = refusal(refused)["base_url"]
    assert message.startswith("The host '127.0.0.1' resolves to ")
    assert "OUTBOUND_ALLOWED_NETWORKS" in message
    assert not ModelAnnotator.objects.exists()


# --- prompt versions -----------------------------------------------------------------------------


def test_an_unknown_task_kind_is_refused_naming_the_known_ones() -> None:
    annotator = endpoint(lab_dataset("prompted-kind"))
    with pytest.raises(ValidationError) as refused:
        services.new_prompt_version(annotator, "summary", system="s", template="{premise} {hypothesis}")
    assert refusal(refused) == {"task_kind": ["Choose one of validation, mpe, two_way, writing."]}


@pytest.mark.parametrize("template", ["{premise} only", "{hypothesis} only", "neither"])
def test_a_template_without_premise_and_hypothesis_is_refused(template: str) -> None:
    annotator = endpoint(lab_dataset("prompted-template"))
    with pytest.raises(ValidationError) as refused:
        services.new_prompt_version(annotator, TaskKind.VALIDATION, system="s", template=template)
    assert refusal(refused) == {"template": ["The template must hold {premise} and {hypothesis}."]}
    assert PromptVersion.objects.filter(annotator=annotator, task_kind=TaskKind.VALIDATION).count() == 1


def test_each_task_kind_counts_its_own_versions_and_is_audited_with_a_user(django_user_model: type[User]) -> None:
    dataset = lab_dataset("prompted")
    annotator = endpoint(dataset)
    run_annotator = services.register_run(dataset, fit_run(dataset))
    user = django_user_model.objects.create_user(username="prompter")

    second = services.new_prompt_version(
        annotator, TaskKind.VALIDATION, system="sys", template="{premise}|{hypothesis}"
    )
    third = services.new_prompt_version(
        annotator, TaskKind.VALIDATION, system="sys3", template="{hypothesis}/{premise}", user=user
    )
    first_of_run = services.new_prompt_version(
        run_annotator, TaskKind.MPE, system="m", template="{premise}{hypothesis}"
    )

    assert (second.version, third.version, first_of_run.version) == (2, 3, 1)
    third.refresh_from_db()
    assert third.annotator == annotator and third.task_kind == TaskKind.VALIDATION
    assert (third.system, third.template) == ("sys3", "{hypothesis}/{premise}")
    assert PromptVersion.objects.get(annotator=annotator, task_kind=TaskKind.MPE).version == 1
    entry = AuditEntry.objects.get(action="model_annotator.prompt_version")
    assert entry.action == "model_annotator.prompt_version" and entry.actor == "prompter"
    assert entry.subject_type == "model_annotators.modelannotator" and entry.subject_id == str(annotator.pk)
    assert entry.subject == "judge" and entry.team_id == dataset.team_id
    assert entry.after == {"prompt": "validation-v3"} and entry.dataset_slugs == ["prompted"]


# --- labelling jobs ------------------------------------------------------------------------------


def test_a_scope_other_than_calibration_or_all_is_refused() -> None:
    annotator = endpoint(lab_dataset("scoped"))
    with pytest.raises(ValidationError) as refused:
        services.start_labelling(annotator, scope="train")
    assert refusal(refused) == {"scope": ["Label the calibration split or every pair."]}
    assert not LabellingJob.objects.exists()


def test_an_unknown_task_is_refused() -> None:
    annotator = endpoint(lab_dataset("tasked"))
    with pytest.raises(ValidationError) as refused:
        services.start_labelling(annotator, task="translate")
    assert refusal(refused) == {"task": ["Label the pairs or check the writing."]}
    assert not LabellingJob.objects.exists()


def test_a_job_is_stored_audited_and_run_once_committed(
    django_user_model: type[User], django_capture_on_commit_callbacks: Any
) -> None:
    dataset = lab_dataset("labelled")
    annotator = endpoint(dataset)
    user = django_user_model.objects.create_user(username="starter")

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = services.start_labelling(annotator, scope="all", limit=7, user=user)

    # The job's own callback; the calibration it wrote marks the dashboard's kept figure with another.
    assert len([callback for callback in callbacks if callback.__module__ != "dashboard.figure_cache"]) == 1
    job = LabellingJob.objects.get(pk=job.pk)
    assert (job.annotator, job.scope, job.limit, job.task, job.created_by) == (annotator, "all", 7, "labels", user)
    assert job.status == JobStatus.DONE, job.error  # the task ran: no pair to label in an empty dataset
    entry = AuditEntry.objects.get(action="model_annotator.job_started")
    assert entry.action == "model_annotator.job_started" and entry.actor == "starter"
    assert entry.subject_type == "model_annotators.modelannotator" and entry.subject_id == str(annotator.pk)
    assert entry.subject == "judge" and entry.team_id == dataset.team_id
    assert entry.after == {"job": job.pk, "task": "labels", "scope": "all", "limit": 7}
    assert entry.dataset_slugs == ["labelled"]


def test_a_job_without_a_user_is_not_audited_and_labels_the_calibration_split() -> None:
    annotator = endpoint(lab_dataset("quiet"))
    job = services.start_labelling(annotator, user=AnonymousUser())
    job.refresh_from_db()
    assert (job.scope, job.limit, job.task, job.created_by) == ("calibration", None, JobTask.LABELS, None)
    assert AuditEntry.objects.filter(action="model_annotator.job_started").count() == 1  # an anonymous actor
    services.start_labelling(annotator)
    assert AuditEntry.objects.filter(action="model_annotator.job_started").count() == 1


def test_checking_the_writing_gives_an_older_endpoint_version_one_of_the_writing_prompt() -> None:
    dataset = lab_dataset("writing-older")
    annotator = endpoint(dataset)
    PromptVersion.objects.filter(annotator=annotator, task_kind=TaskKind.WRITING).delete()

    job = services.start_labelling(annotator, task=JobTask.WRITING_CHECKS)

    assert LabellingJob.objects.get(pk=job.pk).task == JobTask.WRITING_CHECKS
    system, template = DEFAULT_PROMPTS[TaskKind.WRITING]
    prompt = PromptVersion.objects.get(annotator=annotator, task_kind=TaskKind.WRITING)
    assert (prompt.version, prompt.system, prompt.template) == (1, system, template)
    services.start_labelling(annotator, task=JobTask.WRITING_CHECKS)
    assert PromptVersion.objects.filter(annotator=annotator, task_kind=TaskKind.WRITING).count() == 1


def test_labels_or_a_run_get_no_writing_prompt() -> None:
    dataset = lab_dataset("writing-none")
    annotator = endpoint(dataset)
    PromptVersion.objects.filter(annotator=annotator, task_kind=TaskKind.WRITING).delete()
    services.start_labelling(annotator)
    run_annotator = services.register_run(dataset, fit_run(dataset))
    services.start_labelling(run_annotator, task=JobTask.WRITING_CHECKS)
    assert not PromptVersion.objects.filter(task_kind=TaskKind.WRITING).exists()


# --- a study's uses ------------------------------------------------------------------------------


def test_unknown_uses_are_refused_by_name() -> None:
    study = study_of(lab_dataset("uses-unknown"))
    with pytest.raises(ValidationError) as refused:
        services.set_model_use(study, vote_annotator=None, zeta=1, alpha=2)
    assert refused.value.messages == ["unknown uses: alpha, zeta"]
    assert not ModelUse.objects.exists()


@pytest.mark.parametrize("key", ["triage_annotator", "vote_annotator", "writing_checks_annotator"])
def test_each_model_use_takes_a_model_of_the_studys_dataset_only(key: str) -> None:
    dataset = lab_dataset("uses-own")
    study = study_of(dataset)
    own = endpoint(dataset)
    other = endpoint(lab_dataset("uses-other"), name="other")
    refused_uses: dict[str, Any] = {key: other}
    with pytest.raises(ValidationError) as refused:
        services.set_model_use(study, **refused_uses)
    assert refusal(refused) == {key: ["The model annotates another dataset."]}
    assert not ModelUse.objects.exists()
    own_uses: dict[str, Any] = {key: own}
    assert getattr(services.set_model_use(study, **own_uses), key) == own


@pytest.mark.parametrize("accuracy", [0.49, 1.01])
def test_a_vote_threshold_outside_half_to_one_is_refused(accuracy: float) -> None:
    study = study_of(lab_dataset("threshold-refused"))
    with pytest.raises(ValidationError) as refused:
        services.set_model_use(study, vote_min_accuracy=accuracy)
    assert refusal(refused) == {"vote_min_accuracy": ["The threshold must be from 0.5 to 1."]}
    assert not ModelUse.objects.exists()


@pytest.mark.parametrize("accuracy", [0.5, 1.0])
def test_the_vote_threshold_bounds_are_inclusive(accuracy: float) -> None:
    study = study_of(lab_dataset("threshold-edge"))
    services.set_model_use(study, vote_min_accuracy=accuracy)
    assert ModelUse.objects.get(study=study).vote_min_accuracy == accuracy


def test_a_change_of_uses_is_audited_with_only_what_changed(django_user_model: type[User]) -> None:
    dataset = lab_dataset("uses-audited")
    study = study_of(dataset)
    annotator = endpoint(dataset)
    user = django_user_model.objects.create_user(username="chooser")

    services.set_model_use(study, user=user, reason="try triage", triage_annotator=annotator)
    services.set_model_use(study, user=user, vote_annotator=annotator, vote_min_accuracy=0.9, adjudication_help=True)

    first, second = AuditEntry.objects.filter(action="model_use.changed").order_by("pk")
    assert first.action == "model_use.changed" and first.actor == "chooser"
    assert first.subject_type == "crowd.study" and first.subject_id == str(study.pk)
    assert first.subject == "s-uses-audited" and first.team_id == study.team_id
    assert first.reason == "try triage" and first.dataset_slugs == ["uses-audited"]
    assert first.before == {
        "triage_annotator": None,
        "vote_min_accuracy": None,
        "vote_min_calibration_pairs": None,
        "adjudication_help": None,
    }
    assert first.after == {
        "triage_annotator": annotator.pk,
        "vote_min_accuracy": 0.95,
        "vote_min_calibration_pairs": 200,
        "adjudication_help": False,
    }
    assert second.before == {"vote_annotator": None, "vote_min_accuracy": 0.95, "adjudication_help": False}
    assert second.after == {"vote_annotator": annotator.pk, "vote_min_accuracy": 0.9, "adjudication_help": True}
    assert second.reason == ""


def test_uses_left_as_they_were_or_set_without_a_user_are_not_audited(django_user_model: type[User]) -> None:
    dataset = lab_dataset("uses-quiet")
    study = study_of(dataset)
    annotator = endpoint(dataset)
    user = django_user_model.objects.create_user(username="chooser")

    services.set_model_use(study, vote_annotator=annotator)
    services.set_model_use(study, user=user, vote_annotator=annotator)

    assert not AuditEntry.objects.filter(action="model_use.changed").exists()
    assert ModelUse.objects.get(study=study).vote_annotator == annotator


def test_a_studys_uses_are_read_as_plain_values() -> None:
    dataset = lab_dataset("uses-plain")
    annotator = endpoint(dataset)
    use = ModelUse.objects.create(
        study=study_of(dataset),
        triage_annotator=annotator,
        writing_checks_annotator=annotator,
        vote_min_accuracy=0.8,
        vote_min_calibration_pairs=50,
        adjudication_help=True,
    )
    assert services._uses_of(None) == {}
    assert services._uses_of(use) == {
        "triage_annotator": annotator.pk,
        "vote_annotator": None,
        "vote_min_accuracy": 0.8,
        "vote_min_calibration_pairs": 50,
        "adjudication_help": True,
        "writing_checks_annotator": annotator.pk,
    }
