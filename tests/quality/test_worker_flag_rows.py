"""The maintained worker-flag rows (`quality.flag_rows`): what `worker_quality` computes, kept per
scope, followed by new labels once the queued task has run, read by the pages a page of rows at a time."""

import json
from dataclasses import asdict

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from corpus.scope import Scope
from corpus.services import add_label
from quality import flag_rows
from quality import flags as flag_rules
from quality.models import WorkerFlagRow, WorkerFlagScope
from quality.selectors import worker_quality
from tests.quality.test_worker_quality import LABELS, guesser_corpus
from tests.validation.validation_factories import make_pair

pytestmark = pytest.mark.django_db


def shown(rows):
    """A row as the pages show it: the worker, every figure and each flag with its reason and numbers."""
    return [
        (
            row.worker.pk,
            str(row.worker),
            {name: getattr(row, name) for name in flag_rows.FIGURE_FIELDS},
            [asdict(flag) for flag in row.flags],
        )
        for row in rows
    ]


def test_the_rows_equal_worker_quality_after_a_recompute(make_worker):
    dataset, honest, guesser = guesser_corpus(make_worker)
    flag_rows.recompute(Scope.of_dataset(dataset))
    flag_rows.recompute(Scope.everything())
    for scope in (Scope.of_dataset(dataset), Scope.everything()):
        computed = worker_quality(scope)
        stored = flag_rows.as_quality(flag_rows.rows_of(scope))
        assert shown(stored) == shown(computed)
        assert flag_rows.flagged_ids(scope) == [guesser.pk]
    kinds = {flag.kind for flag in stored[0].flags}
    assert stored[0].worker.pk == guesser.pk and flag_rules.RANDOM_GUESSER in kinds
    assert flag_rows.flag_marks_of([guesser.pk, *(worker.pk for worker in honest)]) == {
        guesser.pk: [f"flagged: {flag.kind.replace('_', ' ')}" for flag in stored[0].flags]
    }
    # A second recompute replaces the scope's rows; it adds none.
    flag_rows.recompute(Scope.of_dataset(dataset))
    assert WorkerFlagRow.objects.filter(scope__key=Scope.of_dataset(dataset).datasets_key).count() == len(honest) + 1


def test_the_rows_follow_a_new_label_once_the_queued_task_has_run(
    make_worker, settings, django_capture_on_commit_callbacks
):
    """A label write queues the refresh (after its commit); the task recomputes every scope kept."""
    settings.CELERY_TASK_ALWAYS_EAGER, settings.EMBEDDED_TASKS = True, "inline"  # the task runs here
    cache.clear()  # no eager run in this window yet
    dataset, _honest, _guesser = guesser_corpus(make_worker)
    flag_rows.recompute(Scope.of_dataset(dataset))
    before = WorkerFlagScope.objects.get(key=Scope.of_dataset(dataset).datasets_key).computed_at
    newcomer = make_worker()
    with django_capture_on_commit_callbacks(execute=True):
        add_label(make_pair(dataset, label=LABELS[0]), LABELS[0], worker=newcomer, seconds=5.0)
    stored = {row.worker.pk: row for row in flag_rows.as_quality(flag_rows.rows_of(Scope.of_dataset(dataset)))}
    assert stored[newcomer.pk].labels_given == 1
    assert shown(stored.values()) == shown(
        sorted(worker_quality(Scope.of_dataset(dataset)), key=lambda row: list(stored).index(row.worker.pk))
    )
    assert WorkerFlagScope.objects.get(key=Scope.of_dataset(dataset).datasets_key).computed_at > before


def test_the_workers_page_reads_the_rows_it_shows_and_says_when_they_were_computed(
    client, researcher, make_worker, settings
):
    settings.DASHBOARD_CACHE_SECONDS = 600
    _dataset, _honest, guesser = guesser_corpus(make_worker)
    client.force_login(researcher)
    client.get(reverse("dashboard:workers"))  # the first load computes the rows, once
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        page = client.get(reverse("dashboard:workers"))
    read = [query["sql"] for query in captured.captured_queries]
    # Cold (the figure cache emptied), the maintained rows answer: no worker tally is summed.
    assert not [sql for sql in read if "corpus_workersecondstally" in sql], read
    rows = [sql for sql in read if 'FROM "quality_workerflagrow"' in sql and "LIMIT" in sql]
    assert rows, read
    assert page.context["quality"].object_list[0].worker.pk == guesser.pk
    as_of = WorkerFlagScope.objects.get().computed_at
    assert page.context["flags_as_of"] == as_of
    assert 'id="flags-as-of"' in page.content.decode()


def test_non_finite_figures_are_kept_and_read_back():
    """A median of no timed items is -inf: PostgreSQL's JSON refuses it, the table keeps it."""
    from quality.flag_rows import read, stored

    figures = {"median_seconds": float("-inf"), "nested": [{"rate": float("inf")}, 0.5], "n": 3}
    kept = stored(figures)
    assert json.loads(json.dumps(kept, allow_nan=False)) == kept
    assert read(kept) == figures
