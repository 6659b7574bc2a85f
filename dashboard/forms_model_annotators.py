"""The dashboard's forms of the model annotators. Their choices are the user's teams' objects only
(teams/access.py), so another team's is refused as an unknown one; the writes are
model_annotators.services' (audited there)."""

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from corpus.models import Dataset
from crowd.models import Study
from model_annotators import services
from model_annotators.models import AnnotatorKind, JobTask, ModelAnnotator, ModelUse
from modeling.models import TrainingRun
from modeling.training.selectors import runs_fit_to_label
from teams import access


class FinishedRunChoiceField(forms.ModelChoiceField[TrainingRun]):
    """A finished run named by what tells it apart from the lab's other runs of one model on one
    snapshot: "cbow on snapshot 1 (done)" seven times over lets a researcher pick none knowingly."""

    def label_from_instance(self, obj: TrainingRun) -> str:
        return run_label(obj)


def run_label(run: TrainingRun) -> str:
    """The accuracy named is the platform's own where it scored the checkpoint (a GPU node's figure
    is a claim until then, modeling.training.remeasure); the node's is said beside it only where it
    disagrees, so the choice is not made on a figure the platform did not bear out."""
    check = run.accuracy_check
    if check["remeasured"] is not None:
        accuracy = f"dev accuracy {_percent(check['remeasured'])} (re-measured by the platform"
        if check["state"] == "mismatch":
            accuracy += f"; the node reported {_percent(check['reported'])}"
        accuracy += ")"
    elif check["reported"] is not None:
        accuracy = f"dev accuracy {_percent(check['reported'])} (reported, not re-measured)"
    else:
        accuracy = "no dev accuracy"
    finished = (
        f"finished {timezone.localtime(run.finished_at):%Y-%m-%d %H:%M %Z}" if run.finished_at else "not finished"
    )
    return f"run {run.pk}: {run.model} on snapshot {run.snapshot_id}, {accuracy}, {finished}"


def _percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


class RegisterAnnotatorForm(forms.Form):
    kind = forms.ChoiceField(choices=AnnotatorKind.choices)
    name = forms.CharField(max_length=100, required=False, help_text="Empty: named after the run or the model.")
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.none(), to_field_name="slug")
    study = forms.ModelChoiceField(queryset=Study.objects.none(), to_field_name="slug", required=False)
    training_run = FinishedRunChoiceField(queryset=TrainingRun.objects.none(), required=False)
    base_url = forms.CharField(max_length=500, required=False, help_text="e.g. http://gpu-node:8000/v1")
    model_name = forms.CharField(max_length=200, required=False)
    temperature = forms.FloatField(min_value=0.0, max_value=2.0, initial=0.0, required=False)
    api_key = forms.CharField(
        required=False, widget=forms.PasswordInput, help_text="Sealed on save; never shown again, never logged."
    )
    requests_per_minute = forms.IntegerField(min_value=1, max_value=100000, initial=60, required=False)
    prompt_system = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="Empty: the default prompt (version 1)."
    )
    prompt_template = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="With {premise} and {hypothesis}; given, it is version 2 of the dataset's task kind.",
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        fields: Any = self.fields
        fields["dataset"].queryset = access.scoped(Dataset.objects.order_by("slug"), user, access.RESEARCH)
        fields["study"].queryset = access.scoped(Study.objects.order_by("slug"), user, access.RESEARCH)
        fields["training_run"].queryset = access.scoped(
            runs_fit_to_label().order_by("-pk"), user, access.RESEARCH, via="snapshot__team"
        )

    def clean_base_url(self) -> str:
        """Checked here for the field's own message; services.register_endpoint checks it again."""
        base_url: str = self.cleaned_data.get("base_url", "").strip()
        if base_url and self.data.get("kind") == AnnotatorKind.ENDPOINT:
            try:
                services.check_endpoint_url(base_url)
            except ValidationError as error:
                raise forms.ValidationError(error.message_dict.get("base_url", error.messages)) from error
        return base_url

    def clean(self) -> dict[str, Any]:
        data: dict[str, Any] = super().clean() or {}
        if data.get("kind") == AnnotatorKind.RUN and not data.get("training_run"):
            self.add_error("training_run", "Choose a finished training run.")
        if data.get("kind") == AnnotatorKind.ENDPOINT:
            for field in ("base_url", "model_name"):
                if not data.get(field):
                    self.add_error(field, "An endpoint needs this.")
            if data.get("prompt_system") and not data.get("prompt_template"):
                self.add_error("prompt_template", "A custom prompt needs its template too.")
            if not data.get("name"):
                data["name"] = data.get("model_name") or "endpoint"
        return data


class StartJobForm(forms.Form):
    task = forms.ChoiceField(choices=JobTask.choices, initial=JobTask.LABELS)
    scope = forms.ChoiceField(choices=[("calibration", "the calibration split"), ("all", "every pair")])
    limit = forms.IntegerField(min_value=1, required=False, help_text="At most this many pairs (empty: all).")


class ModelUseForm(forms.ModelForm[ModelUse]):
    """A study's uses, each off by default; the models offered annotate the study's dataset."""

    reason = forms.CharField(max_length=200, required=False, help_text="Kept in the audit log.")

    class Meta:
        model = ModelUse
        fields = [
            "triage_annotator",
            "vote_annotator",
            "vote_min_accuracy",
            "vote_min_calibration_pairs",
            "adjudication_help",
            "writing_checks_annotator",
        ]
        labels = {
            "triage_annotator": "Triage: validate first the pairs this model disputes",
            "vote_annotator": "Vote: this model's label counts beside two humans'",
            "vote_min_accuracy": "Vote: calibration accuracy at least",
            "vote_min_calibration_pairs": "Vote: calibrated on at least this many gold pairs",
            "adjudication_help": "Adjudication help: show the models' labels and reasons on the queue",
            "writing_checks_annotator": "Writing checks: this model judges each written hypothesis",
        }

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        annotators = ModelAnnotator.objects.filter(dataset_id=study.dataset_id).order_by("name", "pk")
        fields: Any = self.fields
        for name in ("triage_annotator", "vote_annotator", "writing_checks_annotator"):
            fields[name].queryset = annotators
            fields[name].required = False
            fields[name].empty_label = "off"
