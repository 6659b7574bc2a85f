"""The Pairs page at any filter costs what its answer does, not what the corpus holds: a fixed
number of statements whatever the pairs, counts from the pair tally or stopped at a cap (and then
said to be "more than", with the exact count on request before a bulk action), the text filter
through the trigram indexes."""

import itertools
import json
import re
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus import tallies
from corpus.adjudication import adjudicate
from corpus.giveaways import counted_label, tokenize
from corpus.labels import LABELS
from corpus.models import Label, Pair, Split
from corpus.scope import Scope
from dashboard.queries import pairs as queries
from dashboard.queries.pairs import PairFilters, count_matching, matching_pairs, text_match

from . import factories
from .factories import C, E, N

pytestmark = pytest.mark.django_db

LABEL_SETS = ([E, E, E, E, E], [N, C, C, C, N], [C, E, N, C, E], [E, N, C, N, E], [E, E, N], [C], [N, N, N, E, N])


def grow(ds, workers, rounds):
    """`rounds` more of every kind of pair: each label set in two genres and two splits, written by
    alice and validated by the others, with a rare and a common word."""
    fiction, letters = factories.genre("fiction"), factories.genre("letters", is_training=False)
    validators = [workers[name] for name in ("bob", "carol", "dan", "erin")]
    for number, (genre, split, labels) in enumerate(
        itertools.product((fiction, letters), (Split.DEV, Split.TRAIN), LABEL_SETS * rounds)
    ):
        premise = factories.premise(ds, genre, split, f"The premise {number} of {genre.slug}.")
        word = "quokka" if number % 9 == 0 else "plain"
        factories.pair(ds, premise, f"A {word} hypothesis {number}.", labels, workers["alice"], validators)


@pytest.fixture
def corpus():
    ds, workers = factories.worker_corpus()
    return ds, workers


QUERIES = [
    {"text": "quokka"},
    {"text": "hypothesis"},
    {"text": "qu"},
    {"worker": "erin"},
    {"writer": "alice"},
    {"worker": "carol", "gold": E},
    {"flag": "typing"},
    {"flag": "copy"},
    {"flag": "guesser"},
    {"genre": "fiction"},
    {"split": "dev"},
    {"gold": "-"},
    {"genre": "letters", "split": "train", "gold": C},
    *({"pattern": name} for name in queries.PATTERNS),
    {"text": "quokka", "genre": "letters", "pattern": "split_221"},
]

# The statements of each filter's page, cold, whatever the corpus's size: every page's five (the
# session, the user, the datasets, the form with the bulk history, the page's rows) and the
# filter's own reads (a genre's check from the kept form, the tally and its adjudicated pairs,
# the filter's ids, the bounded count). The guesser flag's are the worker quality's (below).
STATEMENTS = {
    '{"text": "quokka"}': 7,
    '{"text": "hypothesis"}': 7,
    '{"text": "qu"}': 5,
    '{"worker": "erin"}': 7,
    '{"writer": "alice"}': 7,
    '{"worker": "carol", "gold": "entailment"}': 7,
    '{"flag": "typing"}': 5,
    '{"flag": "copy"}': 5,
    '{"genre": "fiction"}': 8,
    '{"split": "dev"}': 7,
    '{"gold": "-"}': 7,
    '{"genre": "letters", "split": "train", "gold": "contradiction"}': 8,
    **{json.dumps({"pattern": name}): 7 for name in queries.PATTERNS},
    '{"text": "quokka", "genre": "letters", "pattern": "split_221"}': 8,
}


def statements(client, query):
    cache.clear()  # each page as a cold one: the figure cache's state is no filter's
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dashboard:pairs"), query)
    assert response.status_code == 200
    return [entry["sql"] for entry in captured.captured_queries]


def test_each_filter_takes_as_many_statements_at_twice_the_pairs(client, researcher, corpus):
    ds, workers = corpus
    client.force_login(researcher)
    grow(ds, workers, 1)
    # The guesser flag reads the flagged workers through the figure cache, whose statements are the
    # worker quality's (quality.selectors, counted there); its bounded count is checked below.
    sized = [query for query in QUERIES if query.get("flag") != "guesser"]
    before = {json.dumps(query): statements(client, query) for query in sized}
    grow(ds, workers, 1)
    after = {json.dumps(query): statements(client, query) for query in sized}
    for query, sqls in after.items():
        # At most the bounded count more once a page no longer holds every match (the writer's).
        assert len(sqls) == STATEMENTS[query], (query, sqls)
        assert len(before[query]) in (len(sqls), len(sqls) - 1), (query, before[query])


def counted_pairs(sql):
    """Whether a statement counts pairs without a bound: COUNT over the pair table with no LIMIT
    (the adjudicated pairs, few and indexed by `pair_adjudicated`, apart)."""
    bounded = "LIMIT" in sql.upper() or """NOT ("collection_pair"."adjudicated_label" = '')""" in sql
    return "COUNT(" in sql.upper() and '"collection_pair"' in sql and not bounded


def test_no_filter_counts_every_matching_pair(client, researcher, corpus):
    ds, workers = corpus
    grow(ds, workers, 1)
    client.force_login(researcher)
    for query in QUERIES:
        unbounded = [sql for sql in statements(client, query) if counted_pairs(sql)]
        assert unbounded == [], query


def test_the_tally_counts_every_genre_split_gold_and_pattern_as_the_pairs_do(corpus):
    ds, workers = corpus
    grow(ds, workers, 1)
    # Decisions move a pair's gold away from its votes' (and a retired pair's to "-").
    pairs = list(Pair.objects.filter(label_count=5).order_by("pk")[:4])
    adjudicate(pairs[0], C, reason="decided")
    adjudicate(pairs[1], N, reason="decided")
    adjudicate(pairs[2], E, reason="decided")
    adjudicate(pairs[3], "", action="retire", reason="retired")
    golds = ["", *Label.values, "-"]
    for genre, split, gold, pattern in itertools.product(
        ("", "fiction", "letters"), ("", "dev", "train"), golds, ["", *queries.PATTERNS]
    ):
        filters = PairFilters(genre=genre, split=split, gold=gold, pattern=pattern)
        expected = matching_pairs(Scope.of_dataset(ds), filters).count()
        assert count_matching(Scope.of_dataset(ds), filters) == queries.Matched(expected, True), filters


def test_a_count_over_the_cap_says_more_than_and_the_bulk_action_waits_for_the_exact_one(
    client, researcher, corpus, monkeypatch
):
    ds, workers = corpus
    grow(ds, workers, 5)  # more of erin's dev pairs than a page holds: the page is not their count
    monkeypatch.setattr(queries, "COUNT_CAP", 5)
    client.force_login(researcher)
    chosen: dict[str, Any] = {"worker": "erin", "split": "dev"}
    html = client.get(reverse("dashboard:pairs"), chosen).content.decode()
    assert 'data-exact="false"' in html and "more than 5" in html and "about" in html
    assert 'name="expected"' not in html and 'id="count-exactly"' in html
    exact = matching_pairs(Scope.of_dataset(ds), PairFilters(**chosen)).count()
    assert exact > queries.PAGE_SIZE
    html = client.get(reverse("dashboard:pairs"), {**chosen, "count": "exact"}).content.decode()
    assert f'name="expected" value="{exact}"' in html and 'data-exact="true"' in html


def test_a_rare_word_is_looked_up_and_a_common_one_matched_pair_by_pair(corpus, monkeypatch):
    ds, workers = corpus
    grow(ds, workers, 1)
    rare = text_match("quokka")
    assert rare.ids is not None
    assert set(rare.ids) == set(
        matching_pairs(Scope.of_dataset(ds), PairFilters(text="quokka")).values_list("pk", flat=True)
    )
    assert rare.ids == sorted(Pair.objects.filter(hypothesis__icontains="quokka").values_list("pk", flat=True))
    premise_word = text_match("letters")  # in premises only: their pairs
    assert premise_word.ids == sorted(
        Pair.objects.filter(premise__text__icontains="letters").values_list("pk", flat=True)
    )
    pair_id = Pair.objects.order_by("pk").first()
    assert pair_id is not None and pair_id.pk in (text_match(pair_id.pair_id).ids or [])
    monkeypatch.setattr(queries, "TEXT_IDS_CAP", 3)
    assert text_match("hypothesis").ids is None  # more than the cap: a common word
    # Either way the filter takes the same pairs.
    assert set(matching_pairs(Scope.of_dataset(ds), PairFilters(text="hypothesis"))) == set(
        Pair.objects.filter(hypothesis__icontains="hypothesis")
    )


def test_the_text_filter_can_read_the_trigram_indexes(corpus):
    """With sequential scans priced out (as on a corpus too large to read), the text lookup's plan
    reads the hypotheses' and the premises' trigram indexes, not every row."""
    ds, workers = corpus
    grow(ds, workers, 1)
    params: dict[str, str | int] = {
        "like": "%quokka%",
        "exact": "quokka",
        "text": "quokka",
        "cap": queries.TEXT_IDS_CAP,
        "over": queries.TEXT_IDS_CAP + 1,
    }
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + queries.TEXT_IDS_SQL, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "pair_search_hypothesis_trgm" in plan and "premise_text_trgm" in plan
    assert not re.search(r"Seq Scan on collection_pair\b", plan)


def test_a_word_the_hypotheses_hold_too_often_reads_no_premise(corpus):
    """Past the cap in the hypotheses the word is matched pair by pair anyway: the statement stops
    before reading the premises' rows, and their pairs'."""
    ds, workers = corpus
    grow(ds, workers, 1)
    many = Pair.objects.filter(hypothesis__icontains="hypothesis").count()
    assert many > 3

    def premise_reads(cap: int) -> str:
        params: dict[str, str | int] = {
            "like": "%hypothesis%",
            "exact": "hypothesis",
            "text": "hypothesis",
            "cap": cap,
            "over": cap + 1,
        }
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, COSTS OFF) " + queries.TEXT_IDS_SQL, params)
            plan = [row[0] for row in cursor.fetchall()]
        return "\n".join(line for line in plan if "on collection_premise" in line)

    assert "never executed" in premise_reads(3)
    assert "never executed" not in premise_reads(many)


def test_a_word_the_word_tally_counts_past_the_cap_skips_the_trigram_lookup(corpus, monkeypatch):
    ds, workers = corpus
    grow(ds, workers, 1)
    counted = [
        pair
        for pair in Pair.objects.all()
        if "quokka" in tokenize(pair.hypothesis)
        and counted_label(pair.gold_label, pair.author_label, pair.label_count) in LABELS
    ]
    assert tallies.hypotheses_with_word("quokka") == len(counted) > 1

    def looked_up(text: str) -> tuple[list[int] | None, bool]:
        with CaptureQueriesContext(connection) as captured:
            found = text_match(text)
        return found.ids, any("collection_pair_search" in entry["sql"] for entry in captured.captured_queries)

    rare_ids, searched = looked_up("quokka")
    assert searched and rare_ids is not None and len(rare_ids) >= len(counted)
    monkeypatch.setattr(queries, "TEXT_IDS_CAP", len(counted) - 1)
    assert looked_up("Quokka") == (None, False)  # common by the tally: no lookup
    # Two words, or a word under the tally's count, are for the lookup to answer.
    assert looked_up("quokka hypothesis") == (None, True)
    monkeypatch.setattr(queries, "TEXT_IDS_CAP", len(counted))
    assert looked_up("quokka")[1]


def test_a_workers_labelled_pairs_are_read_from_the_label_index_alone(corpus):
    """The worker and guesser filters' ids: the pairs of the workers' labels, from `label_worker_pairs`
    (the worker with the pair), not the label rows."""
    ds, workers = corpus
    grow(ds, workers, 1)
    few = factories.worker("frank")  # a worker of few labels, as most are at scale
    premise = factories.premise(ds, factories.genre("fiction"), Split.DEV, "Frank's premise.")
    factories.pair(ds, premise, "A frank hypothesis.", [E, N], workers["alice"], [few])
    labelled = queries._by_worker([few.pk])
    sql, params = labelled.query.sql_with_params()
    with connection.cursor() as cursor:
        # The indexes as the test's rows make them: the rolled-back rows of earlier tests left the two
        # indexes of a worker's labels bloated unevenly, and the planner then took the smaller one.
        cursor.execute("REINDEX TABLE validation_validationlabel")
        cursor.execute("ANALYZE validation_validationlabel")  # the plan from the rows, not a guess
        # As vacuum leaves a table at scale, its pages all visible: the test's rows, uncommitted, are
        # not, and an index-only scan then saves nothing over an index scan of the other index.
        cursor.execute(
            "UPDATE pg_class SET relallvisible = relpages WHERE oid = 'validation_validationlabel'::regclass"
        )
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Index Only Scan using label_worker_pairs" in plan, plan
