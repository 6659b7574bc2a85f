from django import forms

from .services import HYPOTHESIS_FIELDS, hypothesis_errors


class WritingForm(forms.Form):
    """The three hypotheses (labelled with the prompt family's wording) and an optional problem report.

    The rules live in `services.hypothesis_errors`, so the form and the service agree.
    """

    entailment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    neutral = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    contradiction = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    problem_report = forms.CharField(
        required=False,
        label="Report a problem with this line (optional)",
        help_text="For example: it is not a complete sentence, it is garbled, or it is offensive.",
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def __init__(self, *args, premise, **kwargs):
        super().__init__(*args, **kwargs)
        self.premise = premise
        family = premise.genre.family
        for label, name in HYPOTHESIS_FIELDS.items():
            self.fields[name].label = family.prompt_for(label)
            self.fields[name].widget.attrs["data-label"] = label

    def clean(self):
        data = super().clean()
        hypotheses = {label: data.get(name, "") for label, name in HYPOTHESIS_FIELDS.items()}
        for name, message in hypothesis_errors(self.premise.text, hypotheses, data.get("problem_report", "")).items():
            self.add_error(name, message)
        return data

    def hypotheses(self):
        return {name: self.cleaned_data.get(name, "") for name in HYPOTHESIS_FIELDS.values()}

