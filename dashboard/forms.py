"""The dashboard's study setup form (issue 54, item 1): what a crowd market asks a study for, on one
page, with the admin's rules (crowd.admin.StudyForm: pasted worker lists, the pool's files offered
from the imports; the model's own clean: the dataset fits the task, the quality levels)."""

from typing import Any

from django import forms
from django.conf import settings
from django.db import transaction

from audit import services as audit
from corpus.models import Dataset
from crowd.admin import StudyForm
from crowd.holds import server_hold_rules
from crowd.models import Study
from teams import access

# In the order the page shows them: what, where from, the market's asks, quality, pay, access.
SETUP_FIELDS = [
    "name",
    "slug",
    "task_kind",
    "dataset",
    "pool_genres",
    "pool_sources",
    "serving_order",
    "planned_sessions",
    "tasks_per_batch",
    "estimated_minutes",
    "maximum_minutes",
    "claim_minutes",
    "hold_warning_minutes",
    "hold_extensions",
    "hold_take_backs",
    "payment_per_task",
    "bonus_currency",
    "completion_code",
    "completion_url",
    "typing_evidence_action",
    "catch_trial_share",
    "bonus_per_catch_match",
    "hold_code_at_chance",
    "access",
    "is_active",
]


class StudySetupForm(StudyForm):
    class Meta:
        model = Study
        fields = [*SETUP_FIELDS]
        widgets = {"pool_genres": forms.CheckboxSelectMultiple}

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the datasets of the user's teams (teams.access): the study belongs to its dataset's team.
        self.fields["dataset"].queryset = access.scoped(Dataset.objects.all(), user, access.RESEARCH)  # type: ignore[attr-defined]
        self.fields["slug"].help_text = "The study link's name: /study/<slug>/ (letters, digits, - and _)."
        if self.instance.pk:
            # The link a market already holds must not move under it.
            self.fields["slug"].disabled = True
        # The hold's rules a study owns (issue 54): a new study starts from the server's values; blank
        # keeps following them.
        for name, value in server_hold_rules().items():
            self.fields[name].help_text += f" The server's: {value:g}."
            if not self.instance.pk and not self.is_bound:
                self.initial.setdefault(name, value)
        self.fields["claim_minutes"].help_text += (
            f" The server's: {settings.NLI['WRITING_CLAIM_MINUTES']} minutes for writing,"
            f" {settings.NLI['VALIDATION_CLAIM_MINUTES']} for validation."
        )

    def save(self, commit: bool = True) -> Study:
        """The study, its pool and its worker lists, in the caller's transaction (the view's)."""
        study = super().save(commit=commit)
        if commit:
            study.allowed_workers.set(self.cleaned_data["allowed_ids"])
            study.blocked_workers.set(self.cleaned_data["blocked_ids"])
        return study


def save_study(form: StudySetupForm, user: Any) -> Study:
    """A valid setup form's study, its pool and worker lists saved in one transaction, with the
    settings before and after in the audit log (as the admin records them). A new study belongs
    to its dataset's team."""
    with transaction.atomic():
        change = form.instance.pk is not None
        columns = {
            field.name: field.attname for field in Study._meta.concrete_fields if field.name in form.changed_data
        }
        stored = Study.objects.filter(pk=form.instance.pk).values(*columns.values()).first() if change else None
        before = {name: (stored or {}).get(attname) for name, attname in columns.items()} if change else {}
        study = form.save(commit=False)
        if not change:
            study.team_id = study.dataset.team_id
        study.save()
        form.save_m2m()
        study.allowed_workers.set(form.cleaned_data["allowed_ids"])
        study.blocked_workers.set(form.cleaned_data["blocked_ids"])
        audit.record(
            "study.settings" if change else "study.created",
            actor=user,
            subject=study,
            team_id=study.team_id,
            before=before,
            after={name: getattr(study, attname) for name, attname in columns.items()},
            datasets=[study.dataset.slug],
        )
        return study
