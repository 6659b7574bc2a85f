"""The admin's pair search: by hypothesis, pairID, premise text or promptID, word by word;
through trigram indexes (migrations 0007_trigram_search and 0018_pair_search_table: the pairs'
search text in a table of its own, kept by triggers)."""

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.db import connection

from corpus import admin_pairs as corpus_admin
from corpus.models import Pair
from corpus.services import add_label
from tests import factories

pytestmark = pytest.mark.django_db


@dataclass
class Search:
    """The admin's search (`found(term)`: the names of the pairs it lists) and the pairs by name."""

    search: Callable[[str], set[str]]
    pairs: dict[str, Pair]

    def __call__(self, term: str) -> set[str]:
        return self.search(term)


@pytest.fixture(params=[False, True], ids=["trigram-union", "pair-by-pair"])
def found(client, researcher, monkeypatch, request):
    # Both ways a word is matched (a rare word through the trigram indexes, a common one pair by
    # pair) find the same pairs.
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

    return Search(search, pairs)


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


def test_postgres_has_the_trigram_indexes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE %s", ["%_trgm"])
        names = {row[0] for row in cursor.fetchall()}
    assert names == {
        "pair_search_hypothesis_trgm",
        "pair_search_pair_id_trgm",
        "premise_text_trgm",
        "premise_prompt_id_trgm",
    }


def _pair_table_indexes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'collection_pair'")
        return dict(cursor.fetchall())


def test_no_index_of_the_pair_table_holds_its_texts_and_the_queue_and_author_indexes_are_partial():
    # Every counter move writes an entry into every index of the pair table: the
    # trigram indexes live on the search table, and two indexes cover only the rows read by them.
    indexes = _pair_table_indexes()
    assert not [name for name, definition in indexes.items() if "hypothesis" in definition or "gin" in definition]
    assert "WHERE needs_validation" in indexes["pair_validation_queue"]
    assert "WHERE (author_id IS NOT NULL)" in indexes["pair_author"]
    assert not [
        name for name, definition in indexes.items() if "(author_id)" in definition and "WHERE" not in definition
    ]


def _search_row(pair):
    """(hypothesis, pairID, xmin) of the pair's search row; xmin changes whenever the row is written."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT hypothesis, pair_id, xmin::text FROM collection_pair_search WHERE pair_pk = %s", [pair.pk]
        )
        return cursor.fetchone()


def test_the_search_table_follows_inserts_edits_and_deletes_but_not_counter_moves(client, researcher):
    dataset = factories.dataset("searched")
    premise = factories.premise(dataset)
    pair = factories.pair(dataset, premise, ["entailment"], hypothesis="A heron waits.")
    other = factories.pair(dataset, premise, ["neutral"], hypothesis="A stork waits.")
    hypothesis, pair_id, written = _search_row(pair)
    assert (hypothesis, pair_id) == ("A heron waits.", pair.pair_id)

    # A label moves the pair's counters (a new pair row) and leaves its search row alone.
    add_label(pair, "entailment")
    add_label(pair, "neutral")
    assert Pair.objects.get(pk=pair.pk).label_count == 3
    assert _search_row(pair)[2] == written
    # Saving the whole row (the admin does) with the same texts leaves it alone too.
    Pair.objects.get(pk=pair.pk).save()
    assert _search_row(pair)[2] == written

    # An edited hypothesis or pairID is found under its new words, not its old ones.
    Pair.objects.filter(pk=pair.pk).update(hypothesis="A crane waits.", pair_id="renamed-7")
    assert _search_row(pair)[:2] == ("A crane waits.", "renamed-7")
    client.force_login(researcher)

    def found(term):
        return [p.pk for p in client.get("/admin/corpus/pair/", {"q": term}).context["cl"].result_list]

    assert found("crane") == [pair.pk] and found("heron") == [] and found("renamed-7") == [pair.pk]

    # Deleted pairs leave, one or many; TRUNCATE (a test database's flush) empties it.
    Pair.objects.filter(pk=pair.pk).delete()
    assert _search_row(pair) is None and _search_row(other) is not None
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no deferred foreign-key checks pending
        cursor.execute("TRUNCATE collection_pair CASCADE")
        cursor.execute("SELECT count(*) FROM collection_pair_search")
        assert cursor.fetchone()[0] == 0


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
        cursor.execute("ANALYZE collection_pair_search; ANALYZE collection_premise")
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
