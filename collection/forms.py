from dataclasses import replace
from typing import Any

from django import forms

from corpus.models import Premise

from .sentence_shape import SHAPE_OFF
from .services import HYPOTHESIS_FIELDS, hypothesis_errors, report_cap_message, report_errors, task_rules
from .writing_rules import TaskRules, visible_text


class WritingForm(forms.Form):
    """The three hypotheses (labelled with the prompt family's wording) and an optional problem
    report. The rules live in `services`, so the form and the service agree. Each text box carries
    its length limit (`maxlength`, and `data-max-chars` for the live counter)."""

    entailment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    neutral = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    contradiction = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    problem_report = forms.CharField(
        required=False,
        label="Report a problem with this line (optional)",
        help_text="For example: it is not a complete sentence, it is garbled, or it is offensive.",
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    # How the sentences were typed (static/js/typing_evidence.js; authorship app): numbers, never text.
    typing_evidence = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)

    def __init__(
        self, *args: Any, premise: Premise, rules: TaskRules | None = None, reports_sent: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.premise = premise
        self.rules = rules or task_rules()
        self.reports_sent = reports_sent
        family = premise.genre.family
        for label, name in HYPOTHESIS_FIELDS.items():
            self.fields[name].label = family.prompt_for(label)
            self.fields[name].widget.attrs.update(
                {
                    "data-label": label,
                    "maxlength": self.rules.max_hypothesis_chars,
                    "data-max-chars": self.rules.max_hypothesis_chars,
                }
            )
        report = self.fields["problem_report"].widget.attrs
        report.update({"maxlength": self.rules.max_report_chars, "data-max-chars": self.rules.max_report_chars})
        if self.report_refused:
            report["disabled"] = "disabled"

    @property
    def report_refused(self) -> str:
        """Why the worker cannot report (their cap for this batch is reached), or ""."""
        if self.reports_sent >= self.rules.max_reports_per_batch:
            return report_cap_message(self.rules)
        return ""

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        hypotheses = {label: data.get(name, "") for label, name in HYPOTHESIS_FIELDS.items()}
        report = data.get("problem_report", "")
        # The shape check is the submit's alone: there its refusals and warnings are recorded as the
        # session's evidence (collection/shape_holds.py) and a warning can be overridden.
        unshaped = replace(self.rules, shape_check=SHAPE_OFF)
        errors = hypothesis_errors(self.premise.text, hypotheses, problem_report=report, rules=unshaped)
        errors.update(report_errors(visible_text(report), self.rules, reports_already=self.reports_sent))
        for name, message in errors.items():
            self.add_error(name, message)
        return data

    def hypotheses(self) -> dict[str, str]:
        return {name: self.cleaned_data.get(name, "") for name in HYPOTHESIS_FIELDS.values()}
