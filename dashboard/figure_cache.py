"""The dashboard's figure cache: each expensive figure is computed at most once per few seconds.

Figures are kept in Django's cache, keyed by the figure, dataset and split, so a dashboard left
open by several researchers costs one set of queries per interval while the figures still
follow the data without a restart. On a large corpus (settings.DASHBOARD_LARGE_PAIRS) a stale
figure is shown at once and a Celery task (`dashboard.tasks.refresh_figure`) recomputes it, so
no page waits for an aggregate. Figures a task may recompute register with `@refreshable`.
"""

import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache

from annotation_site.celery import enqueue
from corpus.gold_moves import figures_changed_at
from corpus.models import Dataset, Pair

# Figures a task can recompute by name: name -> function(dataset, split).
REFRESHABLE: dict[str, Callable[[Dataset | None, str | None], Any]] = {}
# How long a figure is kept to be shown while it is being recomputed.
STALE_KEEP_SECONDS = 24 * 3600
REFRESH_LOCK_SECONDS = 300

T = TypeVar("T")
F = TypeVar("F", bound=Callable[[Dataset | None, str | None], Any])


def cache_seconds() -> float:
    return getattr(settings, "DASHBOARD_CACHE_SECONDS", 5)


def refreshable(name: str) -> Callable[[F], F]:
    def register(function: F) -> F:
        REFRESHABLE[name] = function
        return function

    return register


def cache_key(name: str, dataset: Dataset | None, split: str | None) -> str:
    return f"dashboard:{name}:{dataset.pk if dataset else 'all'}:{split or 'all'}"


def corpus_is_large() -> bool:
    # The highest pair id stands in for the count: an index lookup, not a scan.
    highest = Pair.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return bool(highest >= getattr(settings, "DASHBOARD_LARGE_PAIRS", 200_000))


def store(key: str, value: object) -> None:
    cache.set(key, {"value": value, "at": time.time()}, STALE_KEEP_SECONDS)


def cached(name: str, dataset: Dataset | None, split: str | None, compute: Callable[[], T]) -> T:
    """compute() once per few seconds per (figure, dataset, split); on a large corpus, refreshed by a task."""
    seconds = cache_seconds()
    if seconds <= 0:
        return compute()
    key = cache_key(name, dataset, split)
    entry = cache.get(key)
    if entry is not None:
        # A figure from before an exclusion (or a repairing recompute) is out of date at once.
        current = entry["at"] >= figures_changed_at()
        if current and time.time() - entry["at"] < seconds:
            value: T = entry["value"]
            return value
        if name in REFRESHABLE and corpus_is_large():
            schedule_refresh(name, dataset, split)
            stale: T = entry["value"]
            return stale
    computed = compute()
    store(key, computed)
    return computed


def schedule_refresh(name: str, dataset: Dataset | None, split: str | None) -> None:
    """Queue one recompute of a figure; while one is pending, further requests queue nothing."""
    if cache.add(cache_key(name, dataset, split) + ":refreshing", 1, REFRESH_LOCK_SECONDS):
        enqueue("dashboard.refresh_figure", name, dataset.pk if dataset else None, split or "")


def refresh_figure_now(name: str, dataset_id: int | None, split: str | None) -> None:
    dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id else None
    key = cache_key(name, dataset, split)
    try:
        store(key, REFRESHABLE[name](dataset, split or None))
    finally:
        cache.delete(key + ":refreshing")
