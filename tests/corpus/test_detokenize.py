"""Recast text as workers read it: tokenisation spaces closed on worker pages, the stored
text untouched (a DNC export stays byte-exact)."""

import json
import re

import pytest
from django.urls import reverse

from corpus.detokenize import detokenize
from corpus.models import LabelScheme, Pair
from corpus.services import create_pairs
from tests import factories
from tests.conftest import shared_file

RECAST_FILES = ("factuality", "puns", "sentiment", "megaveridicality", "kg_relations")
TOKENISED = re.compile(r" n't\b| '(s|m|re|ve|ll|d)\b| [.,;:?!]( |$)")


def recast_texts():
    folder = shared_file("dnc/dev")
    for name in RECAST_FILES:
        for record in json.loads((folder / f"recast_{name}_data.json").read_text()):
            yield record["context"]
            yield record["hypothesis"]


def test_real_recast_lines_read_as_written_english():
    # Lines of the shared DNC dev files, as they are there.
    assert detokenize("I did n't know what I was missing .") == "I didn't know what I was missing."
    assert detokenize("He is the leader of Italy 's National Alliance , the successor to the Fascist party .") == (
        "He is the leader of Italy's National Alliance, the successor to the Fascist party."
    )
    assert detokenize(
        "Boston heard that i ' m blind enough to look at the situation in the wrong fashion , so i changed my clothes"
    ) == ("Boston heard that i'm blind enough to look at the situation in the wrong fashion, so i changed my clothes")
    assert detokenize("Unisys Corp. 's announcement Friday") == "Unisys Corp.'s announcement Friday"
    assert detokenize("that thing didn't happen .") == "that thing didn't happen."
    texts = list(recast_texts())
    assert len(texts) > 20_000
    left = [text for text in texts if TOKENISED.search(detokenize(text))]
    assert left == []
    assert sum(1 for text in texts if TOKENISED.search(text)) > 10_000  # the files are tokenised


@pytest.mark.parametrize(
    "text",
    [
        'He said "hi" and "bye" to the kids.',
        "The 'special' one costs 5% less (or so); fine!",
        "I can't say it's the students' fault...",
        "Two dogs run - one black, one brown.",
    ],
)
def test_written_text_is_left_as_it_is(text):
    assert detokenize(text) == text


def test_validation_page_shows_recast_text_without_tokenisation_spaces(client, make_worker):
    dataset = factories.dataset("recast-dnc", label_scheme=LabelScheme.TWO_WAY)
    premise = factories.premise(dataset, factories.genre("recast"), text="I did n't know what I was missing .")
    hypotheses = ["The missing did n't happen .", "Italy 's party won .", "It 's , well , fine .", "A ( b ) c .", "D ."]
    create_pairs(
        dataset,
        "dev",
        [
            Pair(premise=premise, pair_id=f"r-{i}", hypothesis=text, author_label="entailment")
            for i, text in enumerate(hypotheses)
        ],
        [["entailment"]] * len(hypotheses),
    )
    worker = make_worker()
    client.force_login(worker.user)
    page = client.get(client.get(reverse("validation:next"))["Location"]).content.decode()
    assert "I didn&#x27;t know what I was missing." in page and "did n&#x27;t" not in page
    for shown in ["The missing didn&#x27;t happen.", "Italy&#x27;s party won.", "It&#x27;s, well, fine.", "A (b) c."]:
        assert shown in page
    # Stored as imported.
    assert set(Pair.objects.values_list("hypothesis", flat=True)) == set(hypotheses)
