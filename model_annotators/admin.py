"""The admin's pages of the model annotators: register one (its API key sealed on save, never shown),
start a labelling job, read its labels and calibrations, set a study's uses. An endpoint's URL is
checked as the dashboard checks it (services.check_endpoint_url), and every save is audited."""

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from audit import services as audit
from markets.sealing import seal_text

from . import services
from .models import Calibration, LabellingJob, ModelAnnotator, ModelLabel, ModelUse, PromptVersion
from .prompts import DEFAULT_PROMPTS

MAX_TIMEOUT_SECONDS = 300.0
# The fields a researcher sets, and what an admin save logs (the key only as whether it was replaced).
AUDITED_FIELDS = (
    "name",
    "dataset",
    "study",
    "kind",
    "training_run",
    "base_url",
    "model_name",
    "temperature",
    "requests_per_minute",
    "max_retries",
    "timeout_seconds",
    "price_per_million_input_tokens",
    "price_per_million_output_tokens",
    "currency",
)


class ModelAnnotatorForm(forms.ModelForm[ModelAnnotator]):
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        help_text="Sealed on save (MARKET_CREDENTIALS_KEY); leave empty to keep the stored key.",
    )

    def clean_base_url(self) -> str:
        base_url: str = self.cleaned_data.get("base_url", "")
        if base_url:
            try:
                services.check_endpoint_url(base_url)
            except ValidationError as error:
                raise forms.ValidationError(error.message_dict.get("base_url", error.messages)) from error
        return base_url

    def clean_timeout_seconds(self) -> float:
        timeout: float = self.cleaned_data.get("timeout_seconds", 30.0)
        if not 1.0 <= timeout <= MAX_TIMEOUT_SECONDS:
            raise forms.ValidationError(f"The deadline of one request must be from 1 to {MAX_TIMEOUT_SECONDS:g} s.")
        return timeout

    class Meta:
        model = ModelAnnotator
        fields = list(AUDITED_FIELDS)


def _plain(value: Any) -> Any:
    """A form value as the audit log keeps it: a row by its primary key, a number or text as is."""
    if hasattr(value, "pk"):
        return value.pk
    return value if isinstance(value, (int, float, str, bool, type(None))) else str(value)


class PromptInline(admin.TabularInline[PromptVersion, ModelAnnotator]):
    model = PromptVersion
    extra = 0
    readonly_fields = ["task_kind", "version", "system", "template", "created_at"]
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # a new version: model_annotators.services.new_prompt_version


@admin.register(ModelAnnotator)
class ModelAnnotatorAdmin(admin.ModelAdmin[ModelAnnotator]):
    form = ModelAnnotatorForm
    list_display = ["name", "kind", "dataset", "model_name", "training_run", "created_at"]
    list_filter = ["kind"]
    inlines = [PromptInline]
    actions = ["label_calibration_split"]
    # save_model writes its own entry (the key never in it): the admin door adds none beside it.
    audits_itself = frozenset({"save"})

    def save_model(self, request: HttpRequest, obj: ModelAnnotator, form: Any, change: bool) -> None:
        key = form.cleaned_data.get("api_key")
        if key:
            obj.sealed_api_key = seal_text(key)
        if not change and request.user.is_authenticated:
            obj.created_by = request.user
        changed = [name for name in AUDITED_FIELDS if name in form.changed_data]
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            if not change and obj.kind == "endpoint":
                for task_kind in DEFAULT_PROMPTS:
                    services.ensure_default_prompt(obj, task_kind)
            if change and not changed and not key:
                return
            # The key is never in the log: whether one was given, only.
            audit.record(
                "model_annotator.changed" if change else "model_annotator.registered",
                actor=request.user,
                subject=obj,
                subject_label=obj.name,
                team_id=obj.dataset.team_id,
                before={name: _plain(form.initial.get(name)) for name in changed} if change else None,
                after={**{name: _plain(form.cleaned_data.get(name)) for name in changed}, "api_key": bool(key)},
                reason="admin",
                datasets=[obj.dataset.slug],
            )

    @admin.action(description="Label the calibration split (in the background)")
    def label_calibration_split(self, request: HttpRequest, queryset: QuerySet[ModelAnnotator]) -> None:
        for annotator in queryset:
            services.start_labelling(annotator, user=request.user)
        messages.success(request, f"{queryset.count()} labelling job(s) queued.")


class ReadOnly(admin.ModelAdmin[Any]):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(LabellingJob)
class LabellingJobAdmin(ReadOnly):
    list_display = ["pk", "annotator", "scope", "status", "progress", "pairs_done", "pairs_total", "created_at"]
    list_filter = ["status"]


@admin.register(ModelLabel)
class ModelLabelAdmin(ReadOnly):
    list_display = ["annotator", "pair", "asked_with", "outcome", "label", "attempts", "latency_ms"]
    list_filter = ["outcome"]
    raw_id_fields = ["pair"]


@admin.register(Calibration)
class CalibrationAdmin(ReadOnly):
    list_display = ["annotator", "asked_with", "pairs", "accuracy", "created_at"]


@admin.register(ModelUse)
class ModelUseAdmin(admin.ModelAdmin[ModelUse]):
    list_display = [
        "study",
        "triage_annotator",
        "vote_annotator",
        "vote_min_accuracy",
        "adjudication_help",
        "writing_checks_annotator",
    ]
