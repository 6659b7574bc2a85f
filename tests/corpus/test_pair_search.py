"""The admin's pair search: by hypothesis, pairID, premise text or promptID, word by word;
through trigram indexes on PostgreSQL (migration 0004_trigram_search), Django's own on SQLite."""

import pytest
from django.db import connection

from corpus import admin as corpus_admin
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[False, True], ids=["trigram-union", "pair-by-pair"])
def found(client, researcher, monkeypatch, request):
    # Both ways a word is matched on PostgreSQL (a rare word through the trigram indexes, a common
    # one pair by pair) find the same pairs; SQLite has Django's own search either way.
    monkeypatch.setattr(corpus_admin, "is_common_word", lambda like: request.param)
    dataset = factories.dataset("searched")
    dog = factories.premise(dataset, text="A brown dog sleeps under 100% of the table.")
    cat = factories.premise(dataset, text="A cat sits on a mat.")
    pairs = {
        "dog": factories.pair(dataset, dog, ["entailment"], hypothesis="An animal rests."),
        "tree": factories.pair(dataset, cat, ["neutral"], hypothesis="The cat likes a_tree nearby."),
        "plain": factories.pair(dataset, cat, ["contradiction"], hypothesis="Nobody is sitting."),
    }
    client.force_login(researcher)

    def search(term):
        response = client.get("/admin/corpus/pair/", {"q": term})
        assert response.status_code == 200
        return {name for name, pair in pairs.items() if f"/admin/corpus/pair/{pair.pk}/change/" in response.text}

    search.pairs = pairs
    return search


def test_words_match_hypothesis_or_premise_text_case_blind(found):
    assert found("DOG") == {"dog"}  # the premise's text
    assert found("cat nearby") == {"tree"}  # every word must match, in either sentence
    assert found("sitting") == {"plain"}
    assert found("giraffe") == set()


def test_like_wildcards_in_a_word_are_literal(found):
    assert found("a_tree") == {"tree"}
    assert found("100%") == {"dog"}
    assert found("_") == {"tree"}


def test_pair_and_prompt_ids_match(found):
    assert found(found.pairs["plain"].pair_id) == {"plain"}
    assert found(found.pairs["dog"].premise.prompt_id) == {"dog"}


@pytest.mark.postgres
def test_postgres_has_the_trigram_indexes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE %s", ["%_trgm"])
        names = {row[0] for row in cursor.fetchall()}
    assert names == {"pair_hypothesis_trgm", "pair_pair_id_trgm", "premise_text_trgm", "premise_prompt_id_trgm"}


@pytest.mark.postgres
def test_a_word_in_most_pairs_is_matched_pair_by_pair_and_counted_only_up_to_the_cap(client, researcher, monkeypatch):
    monkeypatch.setattr(corpus_admin, "SEARCH_COUNT_CAP", 5)
    monkeypatch.setattr(corpus_admin.PairAdmin, "list_per_page", 2)
    dataset = factories.dataset("common")
    for index in range(30):
        premise = factories.premise(dataset, text=f"Premise number {index} about a garden.")
        factories.pair(dataset, premise, ["entailment"], hypothesis=f"A dog number {index} runs.")
        factories.pair(
            dataset, premise, ["neutral"], hypothesis=f"A zebra {index}." if index == 7 else f"Rain {index}."
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE collection_pair; ANALYZE collection_premise")
    # The planner's statistics tell a word in half the pairs from a word in one.
    assert corpus_admin.is_common_word("%dog%") and not corpus_admin.is_common_word("%zebra%")

    client.force_login(researcher)
    listing = client.get("/admin/corpus/pair/", {"q": "dog"}).context["cl"]
    assert (listing.result_count, listing.paginator.num_pages, len(listing.result_list)) == (5, 3, 2)
    assert all("dog" in pair.hypothesis for pair in listing.result_list)
    rare = client.get("/admin/corpus/pair/", {"q": "zebra"}).context["cl"]
    assert [pair.hypothesis for pair in rare.result_list] == ["A zebra 7."] and rare.result_count == 1
    # Without a search the list counts every pair.
    assert client.get("/admin/corpus/pair/").context["cl"].result_count == 60
