"""The batch form: one three-way choice per pair, submitted together."""
from django import forms

from corpus.models import Label

# The keys a validator presses, and the words on the buttons (after MultiNLI/SNLI validation).
CHOICES = [
    (Label.ENTAILMENT.value, "Definitely correct"),
    (Label.NEUTRAL.value, "Might be correct"),
    (Label.CONTRADICTION.value, "Definitely incorrect"),
]
KEYS = {value: str(key) for key, (value, _) in enumerate(CHOICES, 1)}


def field_name(pair):
    return f"label-{pair.pk}"


class ValidationBatchForm(forms.Form):
    def __init__(self, pairs, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pairs = list(pairs)
        for pair in self.pairs:
            self.fields[field_name(pair)] = forms.ChoiceField(
                choices=CHOICES,
                widget=forms.RadioSelect,
                required=False,  # the service names every missing pair in one message
            )

    def labels(self):
        """{pair pk: label or ''}, for the service."""
        return {pair.pk: self.cleaned_data.get(field_name(pair)) or "" for pair in self.pairs}

    def rows(self, missing=()):
        """What the template draws: each pair with its number, its chosen label and its buttons."""
        chosen = self.data if self.is_bound else {}
        for number, pair in enumerate(self.pairs, 1):
            name = field_name(pair)
            value = chosen.get(name, "")
            yield {
                "number": number,
                "pair": pair,
                "name": name,
                "missing": pair.pk in missing,
                "options": [
                    {"value": v, "text": text, "key": KEYS[v], "checked": v == value, "id": f"{name}-{KEYS[v]}"}
                    for v, text in CHOICES
                ],
            }


# --- the MPE judgment task (Lai et al. 2017, Table 2): yes / unknown / no ------------------------

class MpeBatchForm(ValidationBatchForm):
    """One yes / unknown / no choice per multi-premise item; the answers are stored as the three labels."""

    def __init__(self, pairs, *args, **kwargs):
        from corpus.mpe_wording import ANSWERS

        self.answer_choices = [(label, answer) for answer, (label, _) in ANSWERS.items()]
        self.answer_help = {label: text for _, (label, text) in ANSWERS.items()}
        super().__init__(pairs, *args, **kwargs)
        for name in self.fields:
            self.fields[name].choices = self.answer_choices

    def rows(self, missing=()):
        for row in super().rows(missing=missing):
            row["options"] = [
                {**option, "text": answer} for option, (_, answer) in zip(row["options"], self.answer_choices)
            ]
            row["captions"] = row["pair"].premise.premise_sentences
            yield row
