"""A researcher's reference label for a pair (quality.services.set_reference_label) at its edges: a
word that is not a label, and a note over 300 characters, are refused in their own words and write
nothing; a note of exactly 300 is kept. The label, who gave it, the catch-trial mark (a plain
yes/no, whatever truthy value the caller passed) and the note are stored, and a second call
replaces them on the pair's one row. Each call writes one audit entry naming the researcher, the
pair (by its pairID), its team and dataset, the label before and after, and the note as the
reason; the pair's own labels are left as they were."""

from typing import Any

import pytest
from django.contrib.auth.models import User

from audit.models import AuditEntry
from corpus.models import Dataset, Pair
from corpus.services import LabelRefused
from quality.models import ReferenceLabel
from quality.services import set_reference_label
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair() -> Pair:
    return make_pair(make_dataset("reference-data"))


def entries() -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action="gold.reference_label").order_by("pk"))


def refusal(pair: Pair, label: str, **kwargs: Any) -> str:
    with pytest.raises(LabelRefused) as refused:
        set_reference_label(pair, label, **kwargs)
    assert not ReferenceLabel.objects.exists(), "a refusal stores no label"
    assert not entries(), "a refusal writes no audit entry"
    (message,) = refused.value.messages
    return message


def test_a_word_that_is_not_a_label_is_refused_in_words(pair: Pair) -> None:
    assert refusal(pair, "maybe") == "'maybe' is not a label; choose one of entailment, neutral, contradiction."


def test_a_note_over_300_characters_is_refused_and_one_of_300_kept(pair: Pair, researcher: User) -> None:
    assert refusal(pair, "neutral", note="n" * 301) == "The note is limited to 300 characters."
    stored = set_reference_label(pair, "neutral", by=researcher, note="n" * 300)
    assert ReferenceLabel.objects.get(pair=pair).note == "n" * 300 == stored.note


def test_the_label_its_author_the_catch_mark_and_the_note_are_stored(pair: Pair, researcher: User) -> None:
    # A truthy mark that is not a bool (a form's "on") is stored, and audited, as a plain yes.
    stored = set_reference_label(pair, "contradiction", by=researcher, is_catch_trial="on", note="clear case")  # type: ignore[arg-type]
    row = ReferenceLabel.objects.get(pair=pair)
    assert row.pk == stored.pk
    assert (row.label, row.labelled_by, row.is_catch_trial, row.note) == (
        "contradiction",
        researcher,
        True,
        "clear case",
    )
    (entry,) = entries()
    assert entry.after == {"label": "contradiction", "is_catch_trial": True}


def test_a_second_label_replaces_the_first_on_the_pairs_one_row(
    pair: Pair, researcher: User, make_researcher: Any
) -> None:
    first = set_reference_label(pair, "entailment", by=researcher, is_catch_trial=True, note="first look")
    other: User = make_researcher(username="second-researcher")
    second = set_reference_label(pair, "neutral", by=other)
    assert ReferenceLabel.objects.filter(pair=pair).count() == 1
    assert second.pk == first.pk
    row = ReferenceLabel.objects.get(pair=pair)
    assert (row.label, row.labelled_by, row.is_catch_trial, row.note) == ("neutral", other, False, "")
    assert [entry.before for entry in entries()] == [{}, {"label": "entailment", "is_catch_trial": True}]


def test_the_audit_entry_names_the_researcher_the_pair_its_team_and_dataset(pair: Pair, researcher: User) -> None:
    dataset: Dataset = pair.dataset
    assert dataset.team_id is not None
    set_reference_label(pair, "entailment", by=researcher, note="gold for the catch pool")
    (entry,) = entries()
    assert (entry.actor_id, entry.actor) == (researcher.pk, researcher.get_username())
    assert (entry.subject_type, entry.subject_id, entry.subject) == ("corpus.pair", str(pair.pk), pair.pair_id)
    assert entry.team_id == dataset.team_id
    assert entry.dataset_slugs == ["reference-data"]
    assert entry.before == {}
    assert entry.after == {"label": "entailment", "is_catch_trial": False}
    assert entry.reason == "gold for the catch pool"


def test_the_pairs_own_labels_are_left_as_they_were(pair: Pair, researcher: User) -> None:
    counters = ("label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "gold_label")
    before = Pair.objects.values(*counters).get(pk=pair.pk)
    set_reference_label(pair, "contradiction", by=researcher, is_catch_trial=True)
    assert Pair.objects.values(*counters).get(pk=pair.pk) == before
