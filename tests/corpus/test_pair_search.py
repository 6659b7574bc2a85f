"""The admin's pair search: by hypothesis, pairID, premise text or promptID, word by word;
through trigram indexes on PostgreSQL (migration 0004_trigram_search), Django's own on SQLite."""
import pytest
from django.db import connection

from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def found(client, researcher):
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
