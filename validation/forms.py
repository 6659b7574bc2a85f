"""The batch form: one choice per pair in its dataset's label scheme, submitted together."""

from collections.abc import Collection, Iterable, Iterator
from typing import Any

from django import forms
from django.db import models
from django.utils.crypto import salted_hmac

from corpus import labels as scheme_labels
from corpus.models import Label

# The keys a validator presses, and the words on the buttons (after MultiNLI/SNLI validation).
CHOICES = [
    (Label.ENTAILMENT.value, "Definitely correct"),
    (Label.NEUTRAL.value, "Might be correct"),
    (Label.CONTRADICTION.value, "Definitely incorrect"),
]
KEYS = {value: str(key) for key, (value, _) in enumerate(CHOICES, 1)}

# Two-way (DNC): entailed / not entailed, keys 1 and 2.
TWO_WAY_CHOICES = [(scheme_labels.ENTAILED, "Entailed"), (scheme_labels.NOT_ENTAILED, "Not entailed")]
# Ordinal (Zhang et al. 2017, DNC's kg_relations): the rating is the key, 1 impossible ... 5 very likely.
ORDINAL_CHOICES = [
    (str(value), f"{value}: {scheme_labels.ORDINAL_WORDS[value]}") for value in scheme_labels.ORDINAL_VALUES
]

SCHEME_CHOICES = {
    scheme_labels.THREE_WAY_SCHEME: (CHOICES, KEYS),
    scheme_labels.TWO_WAY_SCHEME: (
        TWO_WAY_CHOICES,
        {value: str(key) for key, (value, _) in enumerate(TWO_WAY_CHOICES, 1)},
    ),
    scheme_labels.ORDINAL_SCHEME: (ORDINAL_CHOICES, {value: value for value, _ in ORDINAL_CHOICES}),
}


def field_name(pair: models.Model) -> str:
    """The field of a pair outside a claim (the qualification test's fixed items)."""
    return f"label-{pair.pk}"


def claim_field_name(claim: Any) -> str:  # a claim of any batch task: pk, batch and worker_id
    """The field of one item of a validation claim: an opaque token, never the pair's primary key
    (primary keys would tell catch pairs apart: they stand apart from their neighbours').

    A keyed hash of the claim (its id, batch and worker) under the site's secret: unguessable,
    different for every claim (a catch trial's token looks like any other), and valid only in its
    own batch, since the submit maps the tokens of that batch's claims back to their pairs.
    """
    digest = salted_hmac("validation.claim-field", f"{claim.pk}:{claim.batch}:{claim.worker_id}").hexdigest()
    return f"item-{digest[:24]}"


def scheme_of(pair: object) -> str:
    scheme: str = getattr(getattr(pair, "dataset", None), "label_scheme", None) or scheme_labels.THREE_WAY_SCHEME
    return scheme


class ValidationBatchForm(forms.Form):
    # The items are a task's (pairs, multi-premise items, premise pairs): models with a pk.
    def __init__(self, pairs: Iterable[Any], *args: Any, names: dict[int, str] | None = None, **kwargs: Any) -> None:
        """`names` maps a pair pk to its field name (`claim_field_name` on task pages); by default `field_name`."""
        super().__init__(*args, **kwargs)
        self.pairs = list(pairs)
        self.names = names or {pair.pk: field_name(pair) for pair in self.pairs}
        for pair in self.pairs:
            self.fields[self.names[pair.pk]] = forms.ChoiceField(
                choices=SCHEME_CHOICES[scheme_of(pair)][0],
                widget=forms.RadioSelect,
                required=False,  # the service names every missing pair in one message
            )

    @property
    def scheme(self) -> str:
        """The batch's scheme (a batch never mixes schemes: batch_claims.claim_validation_batch)."""
        return scheme_of(self.pairs[0]) if self.pairs else scheme_labels.THREE_WAY_SCHEME

    def labels(self) -> dict[int, str]:
        """{pair pk: answer in the pair's scheme or ''}, for the service."""
        return {pair.pk: self.cleaned_data.get(self.names[pair.pk]) or "" for pair in self.pairs}

    def rows(self, missing: Collection[int] = ()) -> Iterator[dict[str, Any]]:
        """What the template draws: each pair with its number, its chosen label and its buttons."""
        chosen = self.data if self.is_bound else {}
        for number, pair in enumerate(self.pairs, 1):
            name = self.names[pair.pk]
            value = chosen.get(name, "")
            choices, keys = SCHEME_CHOICES[scheme_of(pair)]
            yield {
                "number": number,
                "pair": pair,
                "name": name,
                "missing": pair.pk in missing,
                "options": [
                    {"value": v, "text": text, "key": keys[v], "checked": v == value, "id": f"{name}-{keys[v]}"}
                    for v, text in choices
                ],
            }


# --- the MPE judgment task (Lai et al. 2017, Table 2): yes / unknown / no ------------------------


class MpeBatchForm(ValidationBatchForm):
    """One yes / unknown / no choice per multi-premise item; the answers are stored as the three labels."""

    def __init__(self, pairs: Iterable[Any], *args: Any, **kwargs: Any) -> None:
        from corpus.mpe_wording import ANSWERS

        # Capitalised as the instructions above the items name them ("Yes"), not "yes" on the buttons.
        self.answer_choices = [(label, answer.capitalize()) for answer, (label, _) in ANSWERS.items()]
        super().__init__(pairs, *args, **kwargs)
        for field in self.fields.values():
            assert isinstance(field, forms.ChoiceField)  # one label's buttons per pair
            field.choices = self.answer_choices

    def rows(self, missing: Collection[int] = ()) -> Iterator[dict[str, Any]]:
        for row in super().rows(missing=missing):
            row["options"] = [
                {**option, "text": answer}
                for option, (_, answer) in zip(row["options"], self.answer_choices, strict=False)
            ]
            row["captions"] = row["pair"].premise.premise_sentences
            yield row


# --- MPE's per-premise labels (Lai et al. 2017 §5.2): one caption and the hypothesis, three answers --


class PremiseBatchForm(ValidationBatchForm):
    """One of the three answers per premise-hypothesis pair (`validation.models.PremisePair`: three-way,
    a premise pair has no dataset of its own); each row shows its one caption and the item's hypothesis."""

    def rows(self, missing: Collection[int] = ()) -> Iterator[dict[str, Any]]:
        for row in super().rows(missing=missing):
            premise_pair = row["pair"]
            sentences = premise_pair.item.premise.premise_sentences
            index = premise_pair.index
            row["premise"] = sentences[index] if index < len(sentences) else ""
            row["hypothesis"] = premise_pair.item.hypothesis
            yield row
