"""Pairs counts its matches from what the page already read: a lone set of pair ids over every
dataset and split is its own count, and so is a first page that holds every match."""

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.scope import EVERYTHING, Scope
from dashboard.queries import pairs as queries
from dashboard.queries.pairs import Matched, PairFilters, count_matching, matching_pairs, select_pairs, text_match

from . import factories
from .factories import E, N
from .test_pairs_filters_scale import grow

pytestmark = pytest.mark.django_db


def corpus_in_two_datasets():
    """worker_corpus (`dash`), grown, and a second dataset where erin labels a quokka pair too."""
    ds, workers = factories.worker_corpus()
    grow(ds, workers, 3)
    other = factories.dataset("other")
    premise = factories.premise(other, factories.genre("fiction"), "train", "Another premise.")
    factories.pair(other, premise, "A quokka elsewhere.", [E, N, E], workers["alice"], [workers["erin"]])
    return ds, other, workers


def page(client, query):
    """The page's counting statements, the count it shows, and the page."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dashboard:pairs"), query)
    assert response.status_code == 200
    html = response.content.decode()
    shown = html.split('id="matched-count" data-value="')[1].split('"')[0]
    counting = [entry["sql"] for entry in captured.captured_queries if "SELECT COUNT(*)" in entry["sql"]]
    return counting, int(shown), html


def test_a_lone_id_set_over_every_dataset_and_split_is_its_own_count(client, researcher, monkeypatch):
    ds, other, _ = corpus_in_two_datasets()
    monkeypatch.setattr(queries, "COUNT_CAP", 5)  # a count the page read would stop at 5
    for filters in (PairFilters(worker="erin"), PairFilters(text="quokka")):
        text = text_match(filters.text) if filters.text else None
        chosen = select_pairs(EVERYTHING, filters, text=text)
        every = matching_pairs(EVERYTHING, filters).count()
        assert every > matching_pairs(Scope.of_dataset(ds), filters).count() > 0  # both datasets'
        assert chosen.lone_set_size == every
        assert count_matching(EVERYTHING, filters, text=text, selection=chosen) == Matched(every, True)
        # A scope, a split or a second filter narrows the set: then it is not the count.
        assert select_pairs(Scope.of_dataset(other), filters, text=text).lone_set_size is None
        assert select_pairs(EVERYTHING.with_split("dev"), filters, text=text).lone_set_size is None
        narrower = PairFilters(**{**vars(filters), "unknown": (), "split": "dev"})
        assert select_pairs(EVERYTHING, narrower, text=text).lone_set_size is None
    client.force_login(researcher)  # a superuser: every dataset
    counting, shown, _ = page(client, {"worker": "erin"})
    assert shown == matching_pairs(EVERYTHING, PairFilters(worker="erin")).count() > queries.PAGE_SIZE
    assert counting == []


def test_a_first_page_that_holds_every_match_is_their_count(client, researcher):
    corpus_in_two_datasets()
    client.force_login(researcher)
    few: dict[str, Any] = {"worker": "erin", "split": "dev"}
    exact = matching_pairs(EVERYTHING, PairFilters(**few)).count()
    assert 0 < exact <= queries.PAGE_SIZE
    counting, shown, html = page(client, few)
    assert (counting, shown) == ([], exact) and 'data-exact="true"' in html
    # A later page's count is from the first pair, so it is counted.
    first = matching_pairs(EVERYTHING, PairFilters(**few)).order_by("pk").values_list("pk", flat=True)[0]
    counting, shown, _ = page(client, {**few, "after": first})
    assert len(counting) == 1 and shown == exact
    # More than a page: the bounded count.
    many: dict[str, Any] = {"worker": "erin", "writer": "alice"}
    exact = matching_pairs(EVERYTHING, PairFilters(**many)).count()
    assert exact > queries.PAGE_SIZE
    counting, shown, _ = page(client, many)
    assert len(counting) == 1 and shown == exact


def test_a_common_words_first_page_says_how_many_it_holds_or_more_than_a_page(client, researcher, monkeypatch):
    corpus_in_two_datasets()
    monkeypatch.setattr(queries, "TEXT_IDS_CAP", 3)  # every word here is common: matched pair by pair
    client.force_login(researcher)
    exact = matching_pairs(EVERYTHING, PairFilters(text="quokka")).count()
    assert queries.TEXT_IDS_CAP < exact <= queries.PAGE_SIZE
    counting, shown, html = page(client, {"text": "quokka"})
    assert (counting, shown) == ([], exact) and 'data-exact="true"' in html
    assert matching_pairs(EVERYTHING, PairFilters(text="hypothesis")).count() > queries.PAGE_SIZE
    counting, shown, html = page(client, {"text": "hypothesis"})
    assert (counting, shown) == ([], queries.PAGE_SIZE) and 'data-exact="false"' in html
