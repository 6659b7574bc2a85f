"""Writes of the model annotators: register one, version its prompts, start a labelling job,
set a study's uses. Each write that belongs together is one transaction."""

from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from audit import services as audit
from base import outbound
from base.task_queue import enqueue
from corpus.models import Dataset
from crowd.models import Study
from markets.sealing import seal_text
from modeling.models import TrainingRun
from modeling.training.selectors import runs_fit_to_label

from .models import AnnotatorKind, JobTask, LabellingJob, ModelAnnotator, ModelUse, PromptVersion, TaskKind
from .prompts import DEFAULT_PROMPTS

LABEL_TASK = "model_annotators.label_pairs"


def _user(user: User | AnonymousUser | None) -> User | None:
    return user if isinstance(user, User) else None


def register_run(
    dataset: Dataset, run: TrainingRun, *, name: str = "", study: Study | None = None, user: Any = None
) -> ModelAnnotator:
    """A finished training run of the platform as an annotator of the dataset. The run must be
    done and have a checkpoint in the platform's storage: nothing is downloaded from elsewhere."""
    if not runs_fit_to_label().filter(pk=run.pk).exists():
        raise ValidationError(
            "Only a finished training run with a stored checkpoint the platform has re-measured can label pairs."
        )
    _check_study(dataset, study)
    with transaction.atomic():
        annotator = ModelAnnotator.objects.create(
            name=name or f"{run.model} run {run.pk}",
            dataset=dataset,
            study=study,
            kind=AnnotatorKind.RUN,
            training_run=run,
            created_by=_user(user),
        )
        _audit_registered(annotator, user, {"training_run": run.pk})
    return annotator


def _audit(action: str, annotator: ModelAnnotator, user: Any, after: dict[str, Any]) -> None:
    audit.record(
        action,
        actor=user,
        subject=annotator,
        subject_label=annotator.name,
        team_id=annotator.dataset.team_id,
        after=after,
        datasets=[annotator.dataset.slug],
    )


def _audit_registered(annotator: ModelAnnotator, user: Any, after: dict[str, Any]) -> None:
    _audit(
        "model_annotator.registered",
        annotator,
        user,
        {"kind": annotator.kind, "dataset": annotator.dataset.slug, **after},
    )


def register_endpoint(
    dataset: Dataset,
    *,
    name: str,
    base_url: str,
    model_name: str,
    temperature: float = 0.0,
    api_key: str = "",
    study: Study | None = None,
    requests_per_minute: int = 60,
    max_retries: int = 3,
    price_per_million_input_tokens: Decimal | float = 0,
    price_per_million_output_tokens: Decimal | float = 0,
    user: Any = None,
) -> ModelAnnotator:
    """An OpenAI-compatible chat endpoint as an annotator, its key sealed (markets.sealing), with
    version 1 of the default prompt of every task kind."""
    check_endpoint_url(base_url)
    if not model_name.strip():
        raise ValidationError({"model_name": "Name the model the endpoint serves."})
    if not 0.0 <= temperature <= 2.0:
        raise ValidationError({"temperature": "The temperature must be from 0 to 2."})
    _check_study(dataset, study)
    with transaction.atomic():
        annotator = ModelAnnotator.objects.create(
            name=name,
            dataset=dataset,
            study=study,
            kind=AnnotatorKind.ENDPOINT,
            base_url=base_url,
            model_name=model_name.strip(),
            temperature=temperature,
            sealed_api_key=seal_text(api_key),
            requests_per_minute=requests_per_minute,
            max_retries=max_retries,
            price_per_million_input_tokens=Decimal(str(price_per_million_input_tokens)),
            price_per_million_output_tokens=Decimal(str(price_per_million_output_tokens)),
            created_by=_user(user),
        )
        for task_kind, (system, template) in DEFAULT_PROMPTS.items():
            PromptVersion.objects.create(
                annotator=annotator, task_kind=task_kind, version=1, system=system, template=template
            )
        # The key is never in the log: whether one is sealed, only.
        _audit_registered(
            annotator,
            user,
            {
                "base_url": base_url,
                "model_name": annotator.model_name,
                "temperature": temperature,
                "api_key": bool(api_key),
            },
        )
    return annotator


def check_endpoint_url(base_url: str) -> None:
    """An endpoint's base URL, as every door that stores one checks it (the dashboard's form, the
    admin, this module): http(s), a host that resolves to addresses the platform may reach
    (base/outbound.py), and no query, fragment or credentials: the platform appends the path it asks."""
    if not base_url.startswith(("http://", "https://")):
        raise ValidationError({"base_url": "The endpoint's base URL must start with http:// or https://."})
    if "?" in base_url or "#" in base_url:
        raise ValidationError({"base_url": "A base URL ends at its path (e.g. http://gpu-node:8000/v1): no ? or #."})
    try:
        outbound.check_url(base_url)
    except outbound.RefusedDestination as error:
        raise ValidationError({"base_url": str(error)}) from error


def _check_study(dataset: Dataset, study: Study | None) -> None:
    if study is not None and study.dataset_id != dataset.pk:
        raise ValidationError({"study": "The study collects another dataset."})


def new_prompt_version(
    annotator: ModelAnnotator, task_kind: str, *, system: str, template: str, user: Any = None
) -> PromptVersion:
    """The next version of a task kind's prompt; the earlier versions and their labels stay. With a
    `user` (the dashboard's form), audited in the same transaction."""
    if task_kind not in TaskKind.values:
        raise ValidationError({"task_kind": f"Choose one of {', '.join(TaskKind.values)}."})
    if "{hypothesis}" not in template or "{premise}" not in template:
        raise ValidationError({"template": "The template must hold {premise} and {hypothesis}."})
    with transaction.atomic():
        ModelAnnotator.objects.select_for_update().get(pk=annotator.pk)  # one version number at a time
        last = annotator.prompts.filter(task_kind=task_kind).aggregate(last=Max("version"))["last"] or 0
        prompt = PromptVersion.objects.create(
            annotator=annotator, task_kind=task_kind, version=last + 1, system=system, template=template
        )
        if user is not None:
            _audit("model_annotator.prompt_version", annotator, user, {"prompt": f"{task_kind}-v{prompt.version}"})
        return prompt


def start_labelling(
    annotator: ModelAnnotator,
    *,
    scope: str = "calibration",
    limit: int | None = None,
    task: str = JobTask.LABELS,
    user: Any = None,
) -> LabellingJob:
    """A pending labelling job, queued once its row is committed (model_annotators.labelling).
    `task` "writing": the job makes writing checks (model_annotators.writing_checks) instead of
    labels; an endpoint registered before they existed gets version 1 of the writing prompt."""
    if scope not in ("calibration", "all"):
        raise ValidationError({"scope": "Label the calibration split or every pair."})
    if task not in JobTask.values:
        raise ValidationError({"task": "Label the pairs or check the writing."})
    with transaction.atomic():
        if task == JobTask.WRITING_CHECKS and annotator.kind == AnnotatorKind.ENDPOINT:
            ensure_default_prompt(annotator, TaskKind.WRITING)
        job = LabellingJob.objects.create(
            annotator=annotator, scope=scope, limit=limit, task=task, created_by=_user(user)
        )
        if user is not None:
            after = {"job": job.pk, "task": task, "scope": scope, "limit": limit}
            _audit("model_annotator.job_started", annotator, user, after)
        transaction.on_commit(lambda: enqueue(LABEL_TASK, job.pk))
    return job


def ensure_default_prompt(annotator: ModelAnnotator, task_kind: str) -> None:
    """Version 1 of the task kind's default prompt, unless the annotator has a version 1 already."""
    system, template = DEFAULT_PROMPTS[task_kind]
    PromptVersion.objects.get_or_create(
        annotator=annotator, task_kind=task_kind, version=1, defaults={"system": system, "template": template}
    )


USES = (
    "triage_annotator",
    "vote_annotator",
    "vote_min_accuracy",
    "vote_min_calibration_pairs",
    "adjudication_help",
    "writing_checks_annotator",
)
ANNOTATOR_USES = ("triage_annotator", "vote_annotator", "writing_checks_annotator")


def set_model_use(study: Study, *, user: Any = None, reason: str = "", **uses: Any) -> ModelUse:
    """Turn a study's uses on or off (`USES`). A model must annotate the study's dataset. With a
    `user` (the dashboard's form), the change is audited in the same transaction."""
    unknown = set(uses) - set(USES)
    if unknown:
        raise ValidationError(f"unknown uses: {', '.join(sorted(unknown))}")
    for key in ANNOTATOR_USES:
        annotator = uses.get(key)
        if annotator is not None and annotator.dataset_id != study.dataset_id:
            raise ValidationError({key: "The model annotates another dataset."})
    accuracy = uses.get("vote_min_accuracy")
    if accuracy is not None and not 0.5 <= accuracy <= 1.0:
        raise ValidationError({"vote_min_accuracy": "The threshold must be from 0.5 to 1."})
    with transaction.atomic():
        before = ModelUse.objects.select_for_update().filter(study=study).first()
        was = _uses_of(before)
        use, _ = ModelUse.objects.update_or_create(study=study, defaults=uses)
        now = _uses_of(use)
        if user is not None and was != now:
            changed = [key for key in USES if was.get(key) != now.get(key)]
            audit.record(
                "model_use.changed",
                actor=user,
                subject=study,
                subject_label=study.slug,
                team_id=study.team_id,
                before={key: was.get(key) for key in changed},
                after={key: now.get(key) for key in changed},
                reason=reason,
                datasets=[study.dataset.slug] if study.dataset_id else [],
            )
    return use


def _uses_of(use: ModelUse | None) -> dict[str, Any]:
    if use is None:
        return {}
    return {key: getattr(use, f"{key}_id" if key in ANNOTATOR_USES else key) for key in USES}
