"""The corpus and artifacts pages name a two-way dataset's labels in its own words."""

import pytest
from django.urls import reverse

from artifacts.models import PairTags
from artifacts.selectors import giveaway_words_for, tag_figures
from artifacts.services import store_tags, tag_columns
from corpus.models import LabelScheme
from corpus.scope import Scope
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_way(db):
    dataset = factories.dataset("recast", label_scheme=LabelScheme.TWO_WAY, is_imported=True)
    for label, hypothesis in [("entailment", "Nobody is there."), ("neutral", "Nobody sleeps."), ("neutral", "A man.")]:
        pair = factories.pair(dataset, factories.premise(dataset), [label] * 5, hypothesis=hypothesis)
        store_tags([PairTags(pair=pair, tagger="test", **tag_columns({"negation"}))])  # counted in the tag tally
    return dataset


def test_the_corpus_page_says_entailed_and_not_entailed(client, researcher, two_way):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:corpus") + "?dataset=recast").content.decode()
    assert 'data-label="entailed"' in page and 'data-label="not-entailed"' in page
    assert 'data-label="contradiction"' not in page and 'data-label="neutral"' not in page


def test_tag_figures_and_giveaway_words_say_entailed_and_not_entailed(two_way):
    negation = next(row for row in tag_figures(Scope.of_dataset(two_way))["tags"] if row["tag"] == "negation")
    assert negation["gold"] == {"entailed": 1, "not-entailed": 2, "-": 0}
    assert negation["most_frequent_gold"] == "not-entailed"
    words = giveaway_words_for(Scope.of_dataset(two_way), min_count=1)
    assert words["per_label"] == {"entailed": 1, "not-entailed": 2} and set(words["words"]) <= {
        "entailed",
        "not-entailed",
    }
    # Three-way data is as it was.
    assert set(giveaway_words_for(Scope.everything(), min_count=1)["per_label"]) == {
        "entailment",
        "neutral",
        "contradiction",
    }
