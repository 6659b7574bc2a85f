"""A dataset's default give-away listing is kept (artifacts.listings): read as kept while the word
tally stands still, recomputed once the tally moves, and recomputed after a fold, off the page."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from artifacts import listings
from artifacts.models import GiveawayListing
from artifacts.selectors import giveaway_words_for
from corpus import tallies
from corpus.models import Label, WordTally
from corpus.scope import Scope
from tests import factories
from tests.plans import analysed_plan, nodes_reading

pytestmark = pytest.mark.django_db

E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


def written(dataset, hypothesis, label, split="train"):
    premise = factories.premise(dataset, factories.genre("fiction"), split=split)
    return factories.pair(dataset, premise, [label], hypothesis=hypothesis)


def corpus_of(dataset, copies=6):
    for _ in range(copies):
        written(dataset, "Nobody is sleeping in the house.", C)
        written(dataset, "A man is sleeping in the house.", E)
        written(dataset, "The man might be tired.", N)


def test_the_kept_listing_is_the_sum_and_is_read_without_summing(settings):
    settings.DASHBOARD_CACHE_SECONDS = 0
    dataset = factories.dataset("kept")
    corpus_of(dataset)
    assert listings.default_listing(dataset) == giveaway_words_for(Scope.of_dataset(dataset))
    assert GiveawayListing.objects.get(dataset=dataset).listing == giveaway_words_for(Scope.of_dataset(dataset))
    assert [word["word"] for word in giveaway_words_for(Scope.of_dataset(dataset))["words"][C]][:1] == ["nobody"]

    with CaptureQueriesContext(connection) as queries:
        kept = listings.default_listing(dataset)
    assert kept == giveaway_words_for(Scope.of_dataset(dataset))
    statements = [query["sql"] for query in queries.captured_queries]
    assert len(statements) == 2 and not any("SUM(" in sql.upper() for sql in statements), statements


def test_a_moved_tally_is_summed_again():
    dataset = factories.dataset("moving")
    corpus_of(dataset)
    before = listings.default_listing(dataset)
    for _ in range(6):
        written(dataset, "Nobody might be tired.", N)
    after = listings.default_listing(dataset)
    assert after != before and after == giveaway_words_for(Scope.of_dataset(dataset))
    assert after["hypotheses"] == before["hypotheses"] + 6


def test_a_fold_recomputes_the_listings_of_the_datasets_it_touched():
    dataset, other = factories.dataset("folded"), factories.dataset("never-read")
    corpus_of(dataset)
    corpus_of(other, copies=2)
    listings.default_listing(dataset)
    written(dataset, "Nobody is tired.", C)
    tallies.fold()
    # Both are kept now, as of the folded rows: the page reads them as they are.
    highest = WordTally.objects.order_by("-pk").values_list("pk", flat=True)[0]
    for scope in (dataset, other):
        kept = GiveawayListing.objects.get(dataset=scope)
        assert kept.tally_mark == highest and kept.listing == giveaway_words_for(Scope.of_dataset(scope))


def test_the_artifacts_page_opens_on_the_kept_listing(client, researcher, settings):
    settings.DASHBOARD_CACHE_SECONDS = 0
    dataset = factories.dataset("paged")
    corpus_of(dataset)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:artifacts"), {"dataset": dataset.slug}).content.decode()
    assert GiveawayListing.objects.filter(dataset=dataset).exists()
    assert "nobody" in page


def test_a_datasets_listing_is_kept_once_so_the_page_follows_the_tally_at_once(client, researcher, settings):
    """Kept in the database only, not in the figure cache as well: a page opened
    right after the word tally moved shows the new words, not the figure cache's copy."""
    settings.DASHBOARD_CACHE_SECONDS = 60
    dataset = factories.dataset("kept-once")
    corpus_of(dataset)
    client.force_login(researcher)
    assert "walrus" not in client.get(reverse("dashboard:artifacts"), {"dataset": dataset.slug}).content.decode()
    for _ in range(6):
        written(dataset, "A walrus is sleeping.", E)
    assert "walrus" in client.get(reverse("dashboard:artifacts"), {"dataset": dataset.slug}).content.decode()
    assert GiveawayListing.objects.get(dataset=dataset).listing == giveaway_words_for(Scope.of_dataset(dataset))


def test_the_newer_row_probe_reads_one_index_entry_whatever_the_other_datasets_wrote():
    """The probe "has the dataset a word tally row newer than its listing" read every newer row of
    the other datasets (1.2M rows after another import), because the planner guessed that among
    so many rows above the mark one was the dataset's. With the statistics of a table where half
    the rows are the dataset's and half, all newer, another's, it reads one index entry."""
    dataset, other = factories.dataset("probed"), factories.dataset("busy")
    genre = factories.genre("fiction")
    table = WordTally._meta.db_table
    fill = (
        f"INSERT INTO {table} (dataset_id, split, genre_id, label, word, n)"
        " SELECT %s, 'train', %s, 'neutral', 'w' || g, 1 FROM generate_series(1, 10000) g"
    )
    with connection.cursor() as cursor:
        cursor.execute(fill, [dataset.pk, genre.pk])
        mark = WordTally.objects.filter(dataset=dataset).order_by("-pk").values_list("pk", flat=True)[0]
        cursor.execute(fill, [other.pk, genre.pk])  # all newer than the mark
        cursor.execute(f"ANALYZE {table}")
    with CaptureQueriesContext(connection) as asked:
        assert not listings._changed_since(dataset, mark)
    (probe,) = asked.captured_queries
    with connection.cursor() as cursor:
        plan = analysed_plan(cursor, probe["sql"])
    scans = list(nodes_reading(plan, table))
    assert scans, plan
    read = sum(scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) for scan in scans)
    assert read <= 1, plan  # the next dataset's first row at most, never the newer rows
    assert listings._changed_since(other, mark)
