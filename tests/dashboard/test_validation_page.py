"""The validation page shows exactly the figures of corpus.agreement.agreement_stats."""

import pytest
from django.urls import reverse

from corpus.agreement import agreement_stats
from corpus.scope import Scope
from corpus.services import add_label

from . import factories
from .pagefigures import figures, number

pytestmark = pytest.mark.django_db

TABLE_KEYS = ["unanimous", "individual_eq_gold", "individual_eq_author", "gold_eq_author", "gold_ne_author", "no_gold"]


def assert_page_matches_stats(html, stats):
    page = figures(html)
    assert number(page.by_id["stat-pairs"][0]) == stats["pairs"]
    assert number(page.by_id["stat-five_label_pairs"][0]) == stats["five_label_pairs"]
    for key in TABLE_KEYS:
        value, text = page.by_id[f"stat-{key}"]
        if stats[key] is None:
            assert value == "" and text == "—"
        else:
            assert number(value) == pytest.approx(stats[key], abs=0, rel=1e-15), key
            assert text == f"{100 * stats[key]:.1f}%", key
    for label, kappa in stats["fleiss_kappa"].items():
        value, text = page.by_id[f"stat-kappa-{label}"]
        if kappa is None:
            assert value == "" and text == "—"
        else:
            assert number(value) == pytest.approx(kappa, rel=1e-15), label
            assert text == f"{kappa:.3f}"
    no_consensus = round(stats["no_gold"] * stats["five_label_pairs"]) if stats["five_label_pairs"] else 0
    expected = {**stats["gold_counts"], "-": no_consensus, "unvalidated": stats["gold_counts"]["-"] - no_consensus}
    for label, count in expected.items():
        value, text = page.by_id[f"stat-gold-{'none' if label == '-' else label}"]
        assert number(value) == count and text == f"{count:,}"
    genres_on_page = {
        row.get("data-genre"): number(value) for row, stat, value, _ in page.rows if stat == "genre-agreement"
    }
    assert genres_on_page == {genre: figures_["agreement"] for genre, figures_ in stats["per_genre"].items()}
    pairs_on_page = {row.get("data-genre"): number(value) for row, stat, value, _ in page.rows if stat == "genre-pairs"}
    assert pairs_on_page == {genre: figures_["pairs"] for genre, figures_ in stats["per_genre"].items()}


def test_every_figure_equals_agreement_stats(client, researcher):
    dataset = factories.corpus()
    client.force_login(researcher)
    stats = agreement_stats(Scope.of_dataset(dataset))
    assert stats["five_label_pairs"] == 4  # the corpus really has figures to compare
    response = client.get(reverse("dashboard:validation"), {"dataset": dataset.slug})
    assert response.status_code == 200
    assert_page_matches_stats(response.content.decode(), stats)


def test_split_selector_narrows_the_figures(client, researcher):
    dataset = factories.corpus()
    client.force_login(researcher)
    for split in ("dev", "train", "test"):
        stats = agreement_stats(Scope.of_dataset(dataset, split))
        response = client.get(reverse("dashboard:validation"), {"dataset": dataset.slug, "split": split})
        assert_page_matches_stats(response.content.decode(), stats)


def test_label_count_tiles_come_from_the_pair_counter(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    page = figures(client.get(reverse("dashboard:validation")).content.decode())
    tiles = {n: number(page.by_id[f"stat-labels-{n}"][0]) for n in range(1, 6)}
    # corpus(): one pair at 1 label, one at 3, four at 5.
    assert tiles == {1: 1, 2: 0, 3: 1, 4: 0, 5: 4}


def test_empty_database_shows_dashes_not_errors(client, researcher):
    client.force_login(researcher)
    response = client.get(reverse("dashboard:validation"))
    assert response.status_code == 200
    assert_page_matches_stats(response.content.decode(), agreement_stats())


def test_unknown_filter_values_are_named_and_ignored(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    response = client.get(reverse("dashboard:validation"), {"dataset": "nope", "split": "dev"})
    html = response.content.decode()
    assert "Unknown filter value(s) ignored: nope" in html
    assert_page_matches_stats(html, agreement_stats(Scope.everything("dev")))


def add_two_labels(dataset):
    pair = dataset.pairs.get(hypothesis="The friend was thanked.")
    add_label(pair, factories.E)
    add_label(pair, factories.E)


def test_without_cache_the_page_follows_every_new_label(client, researcher, settings):
    settings.DASHBOARD_CACHE_SECONDS = 0
    dataset = factories.corpus()
    client.force_login(researcher)
    url = reverse("dashboard:validation")
    assert_page_matches_stats(client.get(url).content.decode(), agreement_stats())
    add_two_labels(dataset)
    after = agreement_stats()
    assert after["five_label_pairs"] == 5
    assert_page_matches_stats(client.get(url).content.decode(), after)


def test_cached_figures_last_only_until_the_cache_expires(client, researcher, settings):
    from django.core.cache import cache

    settings.DASHBOARD_CACHE_SECONDS = 60
    dataset = factories.corpus()
    client.force_login(researcher)
    url = reverse("dashboard:validation")
    before = agreement_stats()
    client.get(url)
    add_two_labels(dataset)
    # Within the cache interval the page may still show the previous figures...
    assert_page_matches_stats(client.get(url).content.decode(), before)
    cache.clear()  # ...and once the entry is gone it shows the new ones, without a restart.
    assert_page_matches_stats(client.get(url).content.decode(), agreement_stats())
