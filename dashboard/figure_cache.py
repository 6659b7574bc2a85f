"""The dashboard's figure cache: each expensive figure is computed at most once per few seconds.

Figures are kept in Django's cache per figure and scope (`corpus.scope.Scope.key`) or study, so a
dashboard left open by several researchers costs one set of queries per interval. On a large
corpus (settings.DASHBOARD_LARGE_PAIRS) a stale figure is shown at once while a Celery task
(`dashboard.tasks.refresh_figure`) recomputes it, so no page waits for an aggregate.
"""

import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from base.release import source_release
from base.task_queue import enqueue
from corpus.models import Pair
from corpus.scope import Scope

# Figures a task can recompute, by name.
REFRESHABLE: dict[str, Callable[[Scope], Any]] = {}
REFRESHABLE_FOR_STUDY: dict[str, Callable[[int], Any]] = {}
# How long a figure is kept to be shown while it is being recomputed.
STALE_KEEP_SECONDS = 24 * 3600
REFRESH_LOCK_SECONDS = 300

T = TypeVar("T")
F = TypeVar("F", bound=Callable[[Scope], Any])
G = TypeVar("G", bound=Callable[[int], Any])


# When gold labels last moved in a way the maintained figures cannot follow (an exclusion, a
# repairing recompute, an adjudication): figures cached before then are out of date.
FIGURES_CHANGED_KEY = "dashboard:figures-changed-at"


def gold_recounted(sender: Any, **kwargs: Any) -> None:
    """Out of date from now, and again once the change has committed (a figure computed in
    between read the data before the commit)."""
    cache.set(FIGURES_CHANGED_KEY, time.time(), None)
    transaction.on_commit(lambda: cache.set(FIGURES_CHANGED_KEY, time.time(), None))


def figures_changed_at() -> float:
    return float(cache.get(FIGURES_CHANGED_KEY) or 0.0)


# When a participant's contributions or ids last left (`privacy.signals.participant_removed`):
# figures cached before then may name or count them, and are never shown again.
PEOPLE_CHANGED_KEY = "dashboard:people-changed-at"


def participant_removed(sender: Any, **kwargs: Any) -> None:
    """Every figure kept until now is not to be shown even while a task recomputes it, now and
    again once the removal has committed."""

    def mark() -> None:
        now = time.time()
        cache.set_many({FIGURES_CHANGED_KEY: now, PEOPLE_CHANGED_KEY: now}, None)

    mark()
    transaction.on_commit(mark)


# When a figure's own rows were last written: what is kept of it, in every scope, is out of date.
def rows_changed_key(name: str) -> str:
    return f"dashboard:rows-changed:{name}"


def rows_changed(name: str) -> None:
    """What is kept of figure `name` is out of date from now, and again once the write commits."""
    key = rows_changed_key(name)
    cache.set(key, time.time(), None)
    transaction.on_commit(lambda: cache.set(key, time.time(), None))


def rows_changed_receiver(name: str) -> Callable[..., None]:
    """A receiver of a model's `post_save` and `post_delete` that marks figure `name` out of date."""

    def receiver(sender: Any, **kwargs: Any) -> None:
        rows_changed(name)

    return receiver


def cache_seconds() -> float:
    return getattr(settings, "DASHBOARD_CACHE_SECONDS", 5)


def refreshable(name: str) -> Callable[[F], F]:
    def register(function: F) -> F:
        REFRESHABLE[name] = function
        return function

    return register


def refreshable_for_study(name: str) -> Callable[[G], G]:
    def register(function: G) -> G:
        REFRESHABLE_FOR_STUDY[name] = function
        return function

    return register


# The keys carry the release (`base.release`): a figure another release kept may have another shape.
def cache_key(name: str, scope: Scope) -> str:
    return f"dashboard:{source_release()}:{name}:{scope.key}"


def study_cache_key(name: str, study_id: int) -> str:
    return f"dashboard:{source_release()}:{name}:study-{study_id}"


def corpus_is_large() -> bool:
    # The highest pair id stands in for the count: an index lookup, not a scan.
    highest = Pair.objects.order_by("-id").values_list("id", flat=True).first() or 0
    return bool(highest >= getattr(settings, "DASHBOARD_LARGE_PAIRS", 200_000))


def store(key: str, compute: Callable[[], T]) -> T:
    """Compute and keep a figure, stamped with when its computing began: a figure that read the
    data before a change committed is older than the change's mark, whenever it is stored."""
    began = time.time()
    value = compute()
    cache.set(key, {"value": value, "at": began}, STALE_KEEP_SECONDS)
    return value


def cached(name: str, scope: Scope, compute: Callable[[], T], *, part: str = "") -> T:
    """compute() once per few seconds per (figure, scope); on a large corpus, refreshed by a task.
    `part`: which part of the figure (a page of its rows), kept apart and out of date with it."""
    refresh = (lambda: schedule_refresh(name, scope)) if name in REFRESHABLE and not part else None
    key = cache_key(name, scope) + (f":{part}" if part else "")
    return _kept(key, name, compute, refresh)


def cached_for_study(name: str, study_id: int, compute: Callable[[], T]) -> T:
    """compute() once per few seconds per (figure, study); on a large corpus, refreshed by a task."""
    refresh = (lambda: schedule_study_refresh(name, study_id)) if name in REFRESHABLE_FOR_STUDY else None
    return _kept(study_cache_key(name, study_id), name, compute, refresh)


def _kept(key: str, name: str, compute: Callable[[], T], refresh: Callable[[], None] | None) -> T:
    """The figure `name` kept under `key` while it is fresh; else computed now, or, on a large
    corpus and when a task can recompute it (`refresh`), the kept one while the task does."""
    seconds = cache_seconds()
    if seconds <= 0:
        return compute()
    entry = cache.get(key)
    own_mark = rows_changed_key(name)
    marks = cache.get_many([FIGURES_CHANGED_KEY, PEOPLE_CHANGED_KEY, own_mark]) if entry is not None else {}
    # A figure from before a participant left may show them: computed again now, never shown.
    if entry is not None and entry["at"] >= float(marks.get(PEOPLE_CHANGED_KEY) or 0.0):
        # A figure from before an exclusion or a write of its own rows is out of date at once.
        current = entry["at"] >= max(float(marks.get(FIGURES_CHANGED_KEY) or 0.0), float(marks.get(own_mark) or 0.0))
        if current and time.time() - entry["at"] < seconds:
            value: T = entry["value"]
            return value
        if refresh is not None and corpus_is_large():
            refresh()
            stale: T = entry["value"]
            return stale
    return store(key, compute)


def schedule_refresh(name: str, scope: Scope) -> None:
    """Queue one recompute of a figure; while one is pending, further requests queue nothing."""
    if cache.add(cache_key(name, scope) + ":refreshing", 1, REFRESH_LOCK_SECONDS):
        named = None if scope.is_everything else scope.datasets_key
        enqueue("dashboard.refresh_figure", name, named, scope.split or "")


def refresh_figure_now(name: str, datasets: int | str | None, split: str | None) -> None:
    """Recompute figure `name` of a scope (`Scope.datasets_key`: a dataset's id, a team group's
    key, None for every dataset; a dataset gone since reads as every dataset)."""
    scope = Scope.of_key(datasets, split) or Scope.everything(split)
    _store_refreshed(cache_key(name, scope), lambda: REFRESHABLE[name](scope))


def schedule_study_refresh(name: str, study_id: int) -> None:
    """Queue one recompute of a study's figure; while one is pending, further requests queue nothing."""
    if cache.add(study_cache_key(name, study_id) + ":refreshing", 1, REFRESH_LOCK_SECONDS):
        enqueue("dashboard.refresh_study_figure", name, study_id)


def refresh_study_figure_now(name: str, study_id: int) -> None:
    _store_refreshed(study_cache_key(name, study_id), lambda: REFRESHABLE_FOR_STUDY[name](study_id))


def _store_refreshed(key: str, compute: Callable[[], Any]) -> None:
    """A task's recompute: stored, and the figure's pending-refresh mark cleared whatever happened."""
    try:
        store(key, compute)
    finally:
        cache.delete(key + ":refreshing")
