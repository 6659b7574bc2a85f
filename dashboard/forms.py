"""The dashboard's study setup form: what a crowd market asks a study for, on one page, with the
admin's rules (crowd.admin.StudyForm)."""

from collections.abc import Callable
from typing import Any

from django import forms
from django.conf import settings
from django.db import transaction

from audit import services as audit
from consent import selectors as consent_selectors
from consent import services as consent_services
from consent.defaults import DEFAULT_SHEET, DEFAULT_STATEMENTS
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
    "no_consent_code",
    "partial_completion_code",
    "typing_evidence_action",
    "min_hypothesis_words",
    "max_hypothesis_sentences",
    "reports_to_hold_premise",
    "max_reports_per_batch",
    "shape_check",
    "shape_refuse_at",
    "auto_exclude_flagged",
    "catch_trial_share",
    "bonus_per_catch_match",
    "hold_code_at_chance",
    "require_signed_link",
    "open_link_unverified",
    "access",
    "is_active",
]


# The writing rules a study sets on its form: blank keeps what the study has (a new one: the defaults).
WRITING_RULE_NUMBERS = (
    "min_hypothesis_words",
    "max_hypothesis_sentences",
    "reports_to_hold_premise",
    "max_reports_per_batch",
    "shape_refuse_at",
)


def _kept_when_blank(name: str) -> Callable[["StudySetupForm"], Any]:
    def clean(form: "StudySetupForm") -> Any:
        value = form.cleaned_data.get(name)
        return getattr(form.instance, name) if value is None else value

    return clean


SHEET_MAX_CHARACTERS = 20_000
STATEMENTS_MAX = 20
STATEMENT_MAX_CHARACTERS = 500


class StudySetupForm(StudyForm):
    # The information sheet is the consent app's (versioned), edited here beside the study's settings.
    information_sheet = forms.CharField(
        required=False,
        max_length=SHEET_MAX_CHARACTERS,
        widget=forms.Textarea(attrs={"rows": 16}),
        help_text="What participants read before their first task (Markdown; HTML is shown as text): purpose, "
        "what is recorded (typing evidence included), pay, duration, contact, how to withdraw. Editing it makes "
        "a new version for later arrivals; those who agreed keep theirs. Blank: no consent step.",
    )
    consent_statements = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="What a participant agrees to with the button under the sheet, one statement per line.",
    )

    clean_min_hypothesis_words = _kept_when_blank("min_hypothesis_words")
    clean_max_hypothesis_sentences = _kept_when_blank("max_hypothesis_sentences")
    clean_reports_to_hold_premise = _kept_when_blank("reports_to_hold_premise")
    clean_max_reports_per_batch = _kept_when_blank("max_reports_per_batch")
    clean_shape_refuse_at = _kept_when_blank("shape_refuse_at")

    def clean_shape_check(self) -> str:
        # Blank (a form that does not show it) keeps the study's: a new one's default.
        return self.cleaned_data.get("shape_check") or self.instance.shape_check

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
        # The hold's rules: a new study starts from the server's values; blank keeps following them.
        for name, value in server_hold_rules().items():
            self.fields[name].help_text += f" The server's: {value:g}."
            if not self.instance.pk and not self.is_bound:
                self.initial.setdefault(name, value)
        self.fields["claim_minutes"].help_text += (
            f" The server's: {settings.NLI['WRITING_CLAIM_MINUTES']} minutes for writing,"
            f" {settings.NLI['VALIDATION_CLAIM_MINUTES']} for validation."
        )
        self.current_sheet = consent_selectors.current_sheet(self.instance) if self.instance.pk else None
        if self.current_sheet is not None:
            self.initial.setdefault("information_sheet", self.current_sheet.text)
            self.initial.setdefault("consent_statements", "\n".join(self.current_sheet.statements))
        elif not self.instance.pk:
            # A new study starts from the template the lab edits (its [places] to fill in).
            self.initial.setdefault("information_sheet", DEFAULT_SHEET)
            self.initial.setdefault("consent_statements", "\n".join(DEFAULT_STATEMENTS))
        self.fields["shape_check"].required = False
        for name in WRITING_RULE_NUMBERS:
            self.fields[name].required = False
            self.fields[name].help_text += f" Blank keeps the study's ({getattr(self.instance, name)})."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        sheet = (cleaned.get("information_sheet") or "").strip()
        statements = [line.strip() for line in (cleaned.get("consent_statements") or "").splitlines() if line.strip()]
        if not sheet and self.current_sheet is not None:
            self.add_error(
                "information_sheet",
                "Participants have this sheet already: it can be edited (a new version), not removed.",
            )
        elif sheet and not statements:
            self.add_error("consent_statements", "Write at least one statement that participants agree to.")
        elif statements and not sheet:
            self.add_error("information_sheet", "Write the information sheet that the consent statements refer to.")
        if len(statements) > STATEMENTS_MAX:
            self.add_error("consent_statements", f"At most {STATEMENTS_MAX} statements, one per line.")
        elif any(len(statement) > STATEMENT_MAX_CHARACTERS for statement in statements):
            self.add_error("consent_statements", f"A statement is at most {STATEMENT_MAX_CHARACTERS} characters.")
        cleaned["consent_statements"] = statements
        return cleaned

    def save(self, commit: bool = True) -> Study:
        """The study, its pool and its worker lists, in the caller's transaction (the view's)."""
        study = super().save(commit=commit)
        if commit:
            study.allowed_workers.set(self.cleaned_data["allowed_ids"])
            study.blocked_workers.set(self.cleaned_data["blocked_ids"])
        return study


def save_study(form: StudySetupForm, user: Any) -> Study:
    """Saved in one transaction with the settings before and after in the audit log (as the admin
    records them). A new study belongs to its dataset's team."""
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
        sheet = None
        if form.cleaned_data["information_sheet"].strip():
            sheet = consent_services.save_information_sheet(
                study, form.cleaned_data["information_sheet"], form.cleaned_data["consent_statements"], user=user
            )
        if sheet is not None:
            audit.record(
                "study.information_sheet",
                actor=user,
                subject=study,
                team_id=study.team_id,
                after={"version": sheet.version, "statements": len(sheet.statements)},
                datasets=[study.dataset.slug],
            )
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
