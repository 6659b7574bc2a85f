"""The maintained worker-flag table (quality/flag_rows.py) at the edges mutmut found unguarded: a
recompute writes every row in `worker_quality`'s order with the flagged workers and forgets the
old count of their pairs; the pairs of flagged workers are counted once each and kept only when
the rows were not recomputed meanwhile; the task's refresh covers every kept scope in key order and
drops a scope whose dataset is gone; readers of a scope never computed get None or nothing, and
the flagged ids come sorted; the approval list computes the rows when they are missing or older
than the dashboard's interval, unless the corpus is large (its highest pair id at the large size
or above), and reads no rows for no workers; a label write queues one refresh a window; stored
figures keep non-finite floats at any depth and give back the rest as they were."""

import json
import math
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.utils import timezone

from corpus.models import Dataset, Label, Pair, Worker
from corpus.scope import EVERYTHING, Scope
from corpus.services import add_label
from quality import flag_rows
from quality.flag_rows import NON_FINITE, read, stored
from quality.flags import TOO_FAST
from quality.models import WorkerFlagRow, WorkerFlagScope
from quality.selectors import worker_quality
from tests.validation.validation_factories import make_dataset, make_pair

MakeWorker = Callable[..., Worker]
E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION

pytestmark = pytest.mark.django_db


def fast_corpus(make_worker: MakeWorker, slug: str = "fast") -> tuple[Dataset, Worker, Worker]:
    """Ten pairs labelled by a steady worker and by one who takes a second an item (the too-fast
    flag's fewest timed items): the fast one is flagged, the steady one is not."""
    dataset = make_dataset(slug)
    steady, fast = make_worker(), make_worker()
    for number in range(10):
        label = (E, N, C)[number % 3]
        pair = make_pair(dataset, label=label)
        add_label(pair, label, worker=steady, seconds=12.0)
        add_label(pair, label, worker=fast, seconds=1.0)
    return dataset, steady, fast


def one_same_label_worker(make_worker: MakeWorker, slug: str = "small") -> tuple[Dataset, list[Worker]]:
    """A small dataset: two workers who label alike, each pair labelled by both."""
    dataset = make_dataset(slug)
    workers = [make_worker(), make_worker()]
    for label in (E, N, C, E):
        pair = make_pair(dataset, label=label)
        for worker in workers:
            add_label(pair, label, worker=worker, seconds=10.0)
    return dataset, workers


def test_a_recompute_writes_every_row_in_order_with_the_flagged_workers(make_worker: MakeWorker) -> None:
    dataset, steady, fast = fast_corpus(make_worker)
    scope = Scope.of_dataset(dataset)
    at = flag_rows.recompute(scope)
    kept = WorkerFlagScope.objects.get(key=scope.datasets_key)
    assert kept.computed_at == at
    assert kept.flagged == [fast.pk]
    assert kept.flagged_pairs is None
    rows = list(WorkerFlagRow.objects.filter(scope=kept).order_by("position"))
    assert [(row.position, row.worker_id) for row in rows] == [(0, fast.pk), (1, steady.pk)]
    assert [flag["kind"] for flag in rows[0].flags] == [TOO_FAST]
    assert rows[0].flags[0].keys() == {"kind", "reason", "figures"} and rows[1].flags == []
    assert set(rows[0].figures) == set(flag_rows.FIGURE_FIELDS)


def test_a_recompute_forgets_the_counted_pairs_and_replaces_the_flagged(make_worker: MakeWorker) -> None:
    dataset, _steady, fast = fast_corpus(make_worker)
    scope = Scope.of_dataset(dataset)
    first = flag_rows.recompute(scope)
    assert flag_rows.count_flagged_pairs(scope, [fast.pk], first) == 10
    assert flag_rows.flagged_with_pairs(scope) == ([fast.pk], 10)
    second = flag_rows.recompute(scope)
    assert second > first
    assert flag_rows.computed_at(scope) == second
    assert flag_rows.flagged_with_pairs(scope) == ([fast.pk], None)
    assert WorkerFlagScope.objects.count() == 1
    assert WorkerFlagRow.objects.count() == 2


def test_the_flagged_workers_pairs_are_counted_once_each(make_worker: MakeWorker) -> None:
    dataset = make_dataset()
    first, second, other = make_worker(), make_worker(), make_worker()
    pairs = [make_pair(dataset, label=E) for _ in range(3)]
    for pair in pairs[:2]:
        add_label(pair, E, worker=first, seconds=5.0)
        add_label(pair, E, worker=second, seconds=5.0)
    add_label(pairs[2], N, worker=other, seconds=5.0)
    assert flag_rows.pairs_labelled_by([first.pk, second.pk]) == 2
    assert flag_rows.pairs_labelled_by([first.pk, other.pk]) == 3
    assert flag_rows.pairs_labelled_by([]) == 0


def test_a_count_is_kept_only_for_the_rows_it_was_counted_for(make_worker: MakeWorker) -> None:
    dataset, workers = one_same_label_worker(make_worker)
    scope = Scope.of_dataset(dataset)
    at = flag_rows.recompute(scope)
    flag_rows.recompute(EVERYTHING)
    # Both scopes computed at the same moment: a count of one is not the other's.
    WorkerFlagScope.objects.update(computed_at=at)
    # Counted for rows recomputed since: returned, not kept.
    assert flag_rows.count_flagged_pairs(scope, [workers[0].pk], at - timedelta(seconds=1)) == 4
    assert flag_rows.flagged_with_pairs(scope) == ([], None)
    assert flag_rows.count_flagged_pairs(scope, [workers[0].pk], at) == 4
    assert dict(WorkerFlagScope.objects.values_list("key", "flagged_pairs")) == {
        scope.datasets_key: 4,
        EVERYTHING.datasets_key: None,
    }


def test_the_refresh_covers_every_kept_scope_and_drops_a_gone_datasets(make_worker: MakeWorker) -> None:
    first, _ = one_same_label_worker(make_worker, "first")
    second, _ = one_same_label_worker(make_worker, "second")
    gone, _ = one_same_label_worker(make_worker, "gone")
    for scope in (Scope.of_dataset(second), EVERYTHING, Scope.of_dataset(first), Scope.of_dataset(gone)):
        flag_rows.recompute(scope)
    before = dict(WorkerFlagScope.objects.values_list("key", "computed_at"))
    gone_key = str(gone.pk)
    Pair.objects.filter(dataset=gone).delete()
    gone.delete()
    refreshed = flag_rows.refresh_every_scope()
    kept = sorted([str(first.pk), str(second.pk), EVERYTHING.datasets_key])
    assert refreshed == kept
    after = dict(WorkerFlagScope.objects.values_list("key", "computed_at"))
    assert sorted(after) == kept
    assert gone_key not in after
    assert all(after[key] > before[key] for key in kept)


def test_a_scope_never_computed_has_no_time_no_flagged_and_no_rows(make_worker: MakeWorker) -> None:
    dataset, workers = one_same_label_worker(make_worker)
    scope = Scope.of_dataset(dataset)
    assert flag_rows.computed_at(scope) is None
    assert flag_rows.flagged_ids(scope) is None
    assert flag_rows.flagged_with_pairs(scope) is None
    assert list(flag_rows.rows_of(scope)) == []
    assert flag_rows.flag_marks_of([worker.pk for worker in workers], scope) == {}


def test_the_flagged_ids_come_sorted_whatever_order_they_were_kept_in(make_worker: MakeWorker) -> None:
    dataset, _ = one_same_label_worker(make_worker)
    scope = Scope.of_dataset(dataset)
    flag_rows.recompute(scope)
    WorkerFlagScope.objects.filter(key=scope.datasets_key).update(flagged=[9, 3, 5], flagged_pairs=7)
    assert flag_rows.flagged_ids(scope) == [3, 5, 9]
    assert flag_rows.flagged_with_pairs(scope) == ([3, 5, 9], 7)


def test_the_rows_read_back_in_position_order_with_their_figures_and_flags(make_worker: MakeWorker) -> None:
    dataset, steady, fast = fast_corpus(make_worker)
    scope = Scope.of_dataset(dataset)
    flag_rows.recompute(scope)
    computed = worker_quality(scope)
    kept = flag_rows.as_quality(flag_rows.rows_of(scope))
    assert [row.worker.pk for row in kept] == [fast.pk, steady.pk]
    assert [row.worker.user.username for row in kept] == [fast.user.username, steady.user.username]
    assert [flag.worker for flag in kept[0].flags] == [fast.pk]
    assert [(flag.kind, flag.reason, dict(flag.figures)) for flag in kept[0].flags] == [
        (flag.kind, flag.reason, dict(flag.figures)) for flag in computed[0].flags
    ]
    assert [(row.labels_given, row.timed_items) for row in kept] == [(10, 10), (10, 10)]
    assert kept[1].flags == []


def test_a_pages_rows_read_in_one_statement_with_their_workers_shown_columns(
    make_worker: MakeWorker, django_assert_num_queries: Any
) -> None:
    _dataset, steady, fast = fast_corpus(make_worker)
    flag_rows.recompute(EVERYTHING)
    # The page reads its slice once: figures, flags and the worker's name and market come with it.
    with django_assert_num_queries(1):
        rows = flag_rows.as_quality(flag_rows.rows_of(EVERYTHING)[:10])
        shown = [
            (row.worker.user.username, row.worker.market, row.worker.external_id, row.worker.is_trusted)
            for row in rows
            if row.worker.user is not None
        ]
        kinds = [[flag.kind for flag in row.flags] for row in rows]
    # worker_quality's order: the flagged worker first.
    assert [name for name, *_rest in shown] == [fast.user.username, steady.user.username]
    assert kinds == [[TOO_FAST], []]


def test_a_figure_missing_from_a_kept_row_reads_as_its_default(make_worker: MakeWorker) -> None:
    dataset, _ = one_same_label_worker(make_worker)
    scope = Scope.of_dataset(dataset)
    flag_rows.recompute(scope)
    row = WorkerFlagRow.objects.filter(scope__key=scope.datasets_key).order_by("position").first()
    assert row is not None
    row.figures = {"labels_given": 4}
    row.save()
    [first, _second] = flag_rows.as_quality(flag_rows.rows_of(scope))
    assert first.labels_given == 4
    assert first.median_seconds is None and first.loo_items == 0 and first.label_counts == {}


def test_the_marks_are_of_the_flagged_workers_asked_for_in_the_scope_asked(make_worker: MakeWorker) -> None:
    dataset, steady, fast = fast_corpus(make_worker)
    flag_rows.recompute(Scope.of_dataset(dataset))
    asked = [fast.pk, fast.pk, steady.pk]
    # Every dataset's rows were never computed: the default scope has no marks.
    assert flag_rows.flag_marks_of(asked) == {}
    marks = flag_rows.flag_marks_of(asked, Scope.of_dataset(dataset))
    assert marks == {fast.pk: ["flagged: too fast"]}
    flag_rows.recompute(EVERYTHING)
    assert flag_rows.flag_marks_of(asked) == marks
    assert flag_rows.flag_marks_of([steady.pk]) == {}
    assert flag_rows.flag_marks_of([]) == {}


def test_approval_marks_for_no_workers_compute_nothing(make_worker: MakeWorker) -> None:
    one_same_label_worker(make_worker)
    assert flag_rows.approval_marks([]) == {}
    assert flag_rows.computed_at(EVERYTHING) is None


def test_approval_marks_compute_the_rows_never_computed(make_worker: MakeWorker) -> None:
    _dataset, steady, fast = fast_corpus(make_worker)
    assert flag_rows.approval_marks([fast.pk, steady.pk, fast.pk]) == {fast.pk: ["flagged: too fast"]}
    assert flag_rows.computed_at(EVERYTHING) is not None


def backdate(seconds: float) -> datetime:
    """Make every dataset's rows `seconds` old; when they now say they were computed."""
    at = timezone.now() - timedelta(seconds=seconds)
    WorkerFlagScope.objects.filter(key=EVERYTHING.datasets_key).update(computed_at=at)
    return at


def test_approval_marks_recompute_rows_at_the_dashboards_interval(make_worker: MakeWorker, settings: Any) -> None:
    _dataset, _steady, fast = fast_corpus(make_worker)
    flag_rows.recompute(EVERYTHING)
    settings.DASHBOARD_CACHE_SECONDS = 600
    at = backdate(60)
    assert flag_rows.approval_marks([fast.pk]) == {fast.pk: ["flagged: too fast"]}
    assert flag_rows.computed_at(EVERYTHING) == at  # fresh: read as they are
    at = backdate(600)
    flag_rows.approval_marks([fast.pk])
    again = flag_rows.computed_at(EVERYTHING)
    assert again is not None and again > at + timedelta(seconds=599)


def test_approval_marks_read_a_large_corpus_rows_as_they_are(make_worker: MakeWorker, settings: Any) -> None:
    _dataset, _steady, fast = fast_corpus(make_worker)
    flag_rows.recompute(EVERYTHING)
    at = backdate(3600)
    highest = Pair.objects.order_by("-id").values_list("id", flat=True).first()
    assert highest is not None
    settings.DASHBOARD_LARGE_PAIRS = highest
    assert flag_rows.approval_marks([fast.pk]) == {fast.pk: ["flagged: too fast"]}
    assert flag_rows.computed_at(EVERYTHING) == at
    settings.DASHBOARD_LARGE_PAIRS = highest + 1
    flag_rows.approval_marks([fast.pk])
    again = flag_rows.computed_at(EVERYTHING)
    assert again is not None and again > at


def test_a_corpus_without_pairs_is_never_large(settings: Any) -> None:
    flag_rows.recompute(EVERYTHING)
    at = backdate(3600)
    settings.DASHBOARD_LARGE_PAIRS = 1
    assert flag_rows.approval_marks([1]) == {}
    again = flag_rows.computed_at(EVERYTHING)
    assert again is not None and again > at


def test_approval_marks_take_the_default_interval(make_worker: MakeWorker, settings: Any) -> None:
    _dataset, _steady, fast = fast_corpus(make_worker)
    del settings.DASHBOARD_CACHE_SECONDS
    del settings.DASHBOARD_LARGE_PAIRS
    flag_rows.recompute(EVERYTHING)
    at = backdate(3)  # within the default five seconds: read as they are
    flag_rows.approval_marks([fast.pk])
    assert flag_rows.computed_at(EVERYTHING) == at
    at = backdate(6)  # past them, on a corpus far under 200,000 pairs: computed again
    flag_rows.approval_marks([fast.pk])
    again = flag_rows.computed_at(EVERYTHING)
    assert again is not None and again > at


def test_a_corpus_is_large_from_200000_pairs_by_default(make_worker: MakeWorker, settings: Any) -> None:
    del settings.DASHBOARD_LARGE_PAIRS
    settings.DASHBOARD_CACHE_SECONDS = 0
    dataset = make_dataset()
    worker = make_worker()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [Pair._meta.db_table])
        (sequence,) = cursor.fetchone()
        cursor.execute(f"SELECT last_value, is_called FROM {sequence}")
        last, called = cursor.fetchone()
        try:
            # The next pair takes id 199,999, the one after 200,000: the large size.
            cursor.execute("SELECT setval(%s, 199998)", [sequence])
            add_label(make_pair(dataset, label=E), E, worker=worker, seconds=5.0)
            flag_rows.recompute(EVERYTHING)
            at = backdate(60)
            flag_rows.approval_marks([worker.pk])
            again = flag_rows.computed_at(EVERYTHING)
            assert again is not None and again > at
            assert make_pair(dataset, label=E).pk == 200_000
            at = backdate(60)
            flag_rows.approval_marks([worker.pk])
            assert flag_rows.computed_at(EVERYTHING) == at
        finally:
            # Sequences ignore the test's rollback: the next tests count from where they were.
            cursor.execute("SELECT setval(%s, %s, %s)", [sequence, last, called])


def test_a_label_write_queues_one_refresh_a_window(
    make_worker: MakeWorker, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    cache.clear()
    dataset, workers = one_same_label_worker(make_worker)
    scope = Scope.of_dataset(dataset)
    at = flag_rows.recompute(scope)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        flag_rows.labels_moved()
    assert len(callbacks) == 1
    refreshed = flag_rows.computed_at(scope)
    assert refreshed is not None and refreshed > at
    assert cache.get(flag_rows.EAGER_REFRESH_KEY) == 1
    # Within the window a second write runs nothing more.
    with django_capture_on_commit_callbacks(execute=True):
        flag_rows.labels_moved()
    assert flag_rows.computed_at(scope) == refreshed
    del workers


def seconds_left(key: str) -> float:
    """How long the cache keeps `key` from now (the local-memory cache or Redis)."""
    full = cache.make_and_validate_key(key)
    backend: Any = cache
    store = getattr(backend, "_cache", None)
    if isinstance(store, dict):
        expiry: float = backend._expire_info[full]
        return expiry - time.time()
    assert store is not None
    return float(store.get_client(full).ttl(full))


def test_a_label_writes_refresh_window_lasts_thirty_seconds_by_default(
    make_worker: MakeWorker, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    if hasattr(settings, "WORKER_FLAGS_COALESCE_SECONDS"):
        del settings.WORKER_FLAGS_COALESCE_SECONDS
    cache.delete(flag_rows.EAGER_REFRESH_KEY)
    one_same_label_worker(make_worker)
    with django_capture_on_commit_callbacks(execute=True):
        flag_rows.labels_moved()
    # The window is the default thirty seconds: not forever, not longer.
    assert 0 < seconds_left(flag_rows.EAGER_REFRESH_KEY) <= 30


def test_non_finite_floats_are_kept_at_any_depth_and_the_rest_as_it_was() -> None:
    value = {"a": [float("-inf"), (1.5, float("nan"))], "b": {"c": float("inf"), "d": "x"}, "e": 2}
    kept = stored(value)
    assert kept == {
        "a": [{NON_FINITE: "-inf"}, [1.5, {NON_FINITE: "nan"}]],
        "b": {"c": {NON_FINITE: "inf"}, "d": "x"},
        "e": 2,
    }
    assert json.loads(json.dumps(kept, allow_nan=False)) == kept
    back = read(kept)
    assert back["a"][0] == float("-inf") and math.isnan(back["a"][1][1]) and back["a"][1][0] == 1.5
    assert back["b"] == {"c": float("inf"), "d": "x"} and back["e"] == 2
    assert stored(1.5) == 1.5 and stored((1, 2)) == [1, 2]
    # A dict with more keys than the stand-in's is a dict, not a float.
    assert read({NON_FINITE: "inf", "other": 1}) == {NON_FINITE: "inf", "other": 1}
