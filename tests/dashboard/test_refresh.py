"""On a large corpus the dashboard shows its last figures at once and a Celery task recomputes them."""

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache

from corpus.scope import Scope
from dashboard.figure_cache import cache_key
from dashboard.queries import collection
from tests.conftest import broker_url, skip_or_fail_in_ci, wait_for

from . import factories


def add_pair(dataset, premise, n):
    factories.pair(dataset, premise, f"Hypothesis number {n} about the scene.", ["entailment"])


def pairs_shown():
    return collection.collection_overview()["totals"]["pairs"]


def age_cached_figure(seconds):
    """Move the cached figure's timestamp back: it is stale now, whatever the machine's speed."""
    key = cache_key("collection", Scope.everything())
    entry = cache.get(key)
    assert entry is not None, "the figure should be cached"
    cache.set(key, dict(entry, at=entry["at"] - seconds), 3600)


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_large_corpus_gets_its_last_figures_while_a_task_recomputes_them(settings, celery_worker_process):
    if broker_url() and "locmem" in django_settings.CACHES["default"]["BACKEND"].lower():
        skip_or_fail_in_ci("a worker's refresh reaches this process only through a shared cache (set CACHE_URL)")
    settings.DASHBOARD_CACHE_SECONDS = 60
    settings.DASHBOARD_LARGE_PAIRS = 1  # every corpus counts as large here
    dataset = factories.dataset()
    premise = factories.premise(dataset, factories.genre("fiction"), "train", "The ship left the harbour at dawn.")
    for n in range(3):
        add_pair(dataset, premise, n)

    assert pairs_shown() == 3  # nothing cached yet: computed in the request
    add_pair(dataset, premise, 3)
    assert pairs_shown() == 3  # within the interval: the cached figure
    age_cached_figure(61)

    # Stale and large: the request answers with the last figure and queues one refresh.
    assert pairs_shown() == 3
    wait_for(lambda: pairs_shown() == 4, timeout=30, message="the refreshed figure")
    assert cache.get(cache_key("collection", Scope.everything()) + ":refreshing") is None


@pytest.mark.django_db
def test_a_small_corpus_is_recomputed_in_the_request(settings):
    settings.DASHBOARD_CACHE_SECONDS = 60
    settings.DASHBOARD_LARGE_PAIRS = 10_000_000
    dataset = factories.dataset()
    premise = factories.premise(dataset, factories.genre("fiction"), "train", "The ship left the harbour at dawn.")
    add_pair(dataset, premise, 0)
    assert pairs_shown() == 1
    add_pair(dataset, premise, 1)
    assert pairs_shown() == 1  # within the interval: the cached figure
    age_cached_figure(61)
    assert pairs_shown() == 2
    assert cache.get(cache_key("collection", Scope.everything()) + ":refreshing") is None
