"""The figure cache at the edges mutmut found unguarded: a figure whose own rows are written is out
of date at once, in every scope and for every study, and again once the write commits, while other
figures stay kept; the marks never expire; a figure begun at the very instant of a mark is current;
no figure is kept when the interval is 0, and one is kept when it is 1 second; on a large corpus a
figure a task recomputes is shown stale while the task does, any other is computed in the request,
and a figure from before a participant left is never shown; the dashboard's ready() wires each
kept figure's receivers once, for its own models, so that they outlive the call."""

import gc
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.apps import apps
from django.core.cache import cache
from django.db import connection
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import Signal
from django.test.utils import CaptureQueriesContext

from artifacts.models import MonitorRefresh
from base.long_tasks import JobStatus
from corpus.models import Label, WorkerExclusion
from corpus.scope import EVERYTHING, Scope
from corpus.signals import gold_recounted as gold_recounted_signal
from crowd.models import Study, TaskKind
from dashboard import figure_cache
from dashboard.figure_cache import (
    FIGURES_CHANGED_KEY,
    PEOPLE_CHANGED_KEY,
    cache_key,
    cached,
    cached_for_study,
    rows_changed,
    rows_changed_key,
    study_cache_key,
)
from dashboard.queries import artifacts as artifact_queries
from dashboard.queries import model_annotators as queries
from model_annotators.models import (
    AnnotatorKind,
    Calibration,
    ModelAnnotator,
    ModelUse,
    Outcome,
    Verdict,
    WritingCheck,
)
from model_annotators.writing_checks import writing_check_annotators
from privacy.signals import participant_removed as participant_removed_signal
from tests import factories
from tests.authorship.test_mutants_authorship_selectors import scored, typed, utc_today
from tests.quality.test_mutants_admin_and_tasks import ready_again

from .test_workers_page_kept_figures import annotator_of

pytestmark = pytest.mark.django_db

SPLIT = Scope.everything("train")
REFRESHED = "kept-figure-a-task-recomputes"
STUDY_REFRESHED = "kept-study-figure-a-task-recomputes"


def counter() -> Callable[[], int]:
    """A figure's computation: 1, 2, 3... one more each time it is computed."""
    numbers = itertools.count(1)
    return lambda: next(numbers)


def age(key: str, seconds: float) -> None:
    """Move the kept figure's timestamp back: stale now, whatever the machine's speed."""
    entry = cache.get(key)
    assert entry is not None, "the figure should be kept"
    cache.set(key, dict(entry, at=entry["at"] - seconds), 3600)


def kept_for_ever(key: str) -> bool:
    """Whether the cache keeps `key` without an expiry (the local-memory cache or Redis)."""
    full = cache.make_and_validate_key(key)
    backend: Any = cache
    store = getattr(backend, "_cache", None)
    if isinstance(store, dict):
        return bool(full in store and backend._expire_info[full] is None)
    assert store is not None
    return bool(store.get_client(full).ttl(full) == -1)


@pytest.fixture
def kept_long(settings: Any) -> None:
    settings.DASHBOARD_CACHE_SECONDS = 3600  # only a mark moves a kept figure


@pytest.fixture
def tasks_inline(settings: Any) -> Iterator[None]:
    """A figure of each kind a task recomputes, the task run inline so its result can be read."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    settings.DASHBOARD_CACHE_SECONDS = 60
    figure_cache.refreshable(REFRESHED)(lambda scope: "recomputed by the task")
    figure_cache.refreshable_for_study(STUDY_REFRESHED)(lambda study_id: f"study {study_id} recomputed by the task")
    try:
        yield
    finally:
        figure_cache.REFRESHABLE.pop(REFRESHED, None)
        figure_cache.REFRESHABLE_FOR_STUDY.pop(STUDY_REFRESHED, None)


@pytest.mark.usefixtures("kept_long")
def test_a_figure_is_out_of_date_in_every_scope_once_its_own_rows_are_written_and_no_other_is() -> None:
    """Fails if a write of a figure's rows leaves it kept in a scope, or puts another figure out of date."""
    first, other = counter(), counter()
    assert cached("kept-first", EVERYTHING, first) == 1
    assert cached("kept-first", EVERYTHING, first) == 1  # kept
    assert cached("kept-first", SPLIT, first) == 2  # each scope kept apart
    assert cached("kept-other", EVERYTHING, other) == 1

    rows_changed("kept-first")

    assert cached("kept-first", EVERYTHING, first) == 3
    assert cached("kept-first", SPLIT, first) == 4
    assert cached("kept-first", EVERYTHING, first) == 3  # the recomputed figure is kept again
    assert cached("kept-other", EVERYTHING, other) == 1


@pytest.mark.usefixtures("kept_long")
def test_a_study_figure_is_out_of_date_once_its_own_rows_are_written_kept_apart_per_study_and_figure() -> None:
    """Fails if a study's figure stays kept after its rows are written, or two studies or figures share one."""
    first, other = counter(), counter()
    assert cached_for_study("kept-study-first", 1, first) == 1
    assert cached_for_study("kept-study-first", 1, first) == 1
    assert cached_for_study("kept-study-first", 2, first) == 2
    assert cached_for_study("kept-study-other", 1, other) == 1

    rows_changed("kept-study-first")

    assert cached_for_study("kept-study-first", 1, first) == 3
    assert cached_for_study("kept-study-first", 2, first) == 4
    assert cached_for_study("kept-study-other", 1, other) == 1


@pytest.mark.usefixtures("kept_long")
def test_a_figure_computed_before_its_rows_write_commits_is_out_of_date_once_it_commits(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Fails if the write's commit does not mark the figure again: one that read the rows before it stays kept."""
    figure = counter()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        rows_changed("kept-committed")
        assert cached("kept-committed", EVERYTHING, figure) == 1
        assert cached("kept-committed", EVERYTHING, figure) == 1
    assert len(callbacks) == 1
    assert cached("kept-committed", EVERYTHING, figure) == 2


def test_the_mark_of_a_figures_rows_never_expires_before_or_after_the_commit(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Fails if the mark expires: a figure kept from before the write would be shown again later."""
    with django_capture_on_commit_callbacks(execute=True):
        rows_changed("kept-for-ever")
        assert kept_for_ever(rows_changed_key("kept-for-ever"))
        cache.delete(rows_changed_key("kept-for-ever"))
    assert kept_for_ever(rows_changed_key("kept-for-ever"))


@pytest.mark.usefixtures("kept_long")
def test_a_figure_begun_at_the_instant_of_every_mark_is_current() -> None:
    """Fails if a figure stamped at the very time of a mark counts as from before it."""
    figure = counter()
    assert cached("kept-same-instant", EVERYTHING, figure) == 1
    at = cache.get(cache_key("kept-same-instant", EVERYTHING))["at"]
    cache.set_many({FIGURES_CHANGED_KEY: at, PEOPLE_CHANGED_KEY: at, rows_changed_key("kept-same-instant"): at}, None)
    assert cached("kept-same-instant", EVERYTHING, figure) == 1


@pytest.mark.usefixtures("kept_long")
def test_a_figure_from_before_gold_moved_or_a_participant_left_is_computed_again() -> None:
    """Fails if the gold's mark or the participants' mark is not read: an out-of-date figure shown."""
    figure = counter()
    assert cached("kept-marked", EVERYTHING, figure) == 1
    figure_cache.gold_recounted(sender=None)
    assert cached("kept-marked", EVERYTHING, figure) == 2
    figure_cache.participant_removed(sender=None)
    assert cached("kept-marked", EVERYTHING, figure) == 3
    assert cached("kept-marked", EVERYTHING, figure) == 3


def test_no_figure_is_kept_when_the_interval_is_zero_and_one_is_when_it_is_a_second(settings: Any) -> None:
    """Fails if an interval of 0 keeps figures in the shared cache, or one of 1 second keeps none."""
    settings.DASHBOARD_CACHE_SECONDS = 0
    figure = counter()
    assert cached("kept-interval", EVERYTHING, figure) == 1
    assert cached("kept-interval", EVERYTHING, figure) == 2
    assert cache.get(cache_key("kept-interval", EVERYTHING)) is None

    settings.DASHBOARD_CACHE_SECONDS = 1
    assert cached("kept-interval", EVERYTHING, figure) == 3
    entry = cache.get(cache_key("kept-interval", EVERYTHING))
    assert entry is not None and entry["value"] == 3


@pytest.mark.usefixtures("tasks_inline")
def test_a_large_corpus_shows_the_kept_figure_while_the_task_recomputes_it(settings: Any) -> None:
    """Fails if a stale figure a task recomputes is computed in the request, or no task recomputes it."""
    settings.DASHBOARD_LARGE_PAIRS = 0  # every corpus counts as large here
    assert cached(REFRESHED, EVERYTHING, lambda: "first") == "first"
    age(cache_key(REFRESHED, EVERYTHING), 61)
    assert cached(REFRESHED, EVERYTHING, lambda: "in the request") == "first"
    assert cached(REFRESHED, EVERYTHING, lambda: "in the request") == "recomputed by the task"
    assert cache.get(cache_key(REFRESHED, EVERYTHING) + ":refreshing") is None

    assert cached_for_study(STUDY_REFRESHED, 5, lambda: "first") == "first"
    age(study_cache_key(STUDY_REFRESHED, 5), 61)
    assert cached_for_study(STUDY_REFRESHED, 5, lambda: "in the request") == "first"
    assert cached_for_study(STUDY_REFRESHED, 5, lambda: "in the request") == "study 5 recomputed by the task"
    assert cache.get(study_cache_key(STUDY_REFRESHED, 5) + ":refreshing") is None


@pytest.mark.usefixtures("tasks_inline")
def test_a_stale_figure_no_task_recomputes_or_of_a_small_corpus_is_computed_in_the_request(settings: Any) -> None:
    """Fails if a stale figure is shown where no task recomputes it, or where the corpus is small."""
    settings.DASHBOARD_LARGE_PAIRS = 0
    for name in ("kept-no-task", "kept-no-task-for-study"):
        assert cached(name, EVERYTHING, lambda: "first") == "first"
        age(cache_key(name, EVERYTHING), 61)
        assert cached(name, EVERYTHING, lambda: "in the request") == "in the request"
    assert cached_for_study("kept-no-task", 5, lambda: "first") == "first"
    age(study_cache_key("kept-no-task", 5), 61)
    assert cached_for_study("kept-no-task", 5, lambda: "in the request") == "in the request"

    settings.DASHBOARD_LARGE_PAIRS = 10_000_000  # a small corpus
    assert cached(REFRESHED, EVERYTHING, lambda: "first") == "first"
    age(cache_key(REFRESHED, EVERYTHING), 61)
    assert cached(REFRESHED, EVERYTHING, lambda: "in the request") == "in the request"
    assert cached_for_study(STUDY_REFRESHED, 5, lambda: "first") == "first"
    age(study_cache_key(STUDY_REFRESHED, 5), 61)
    assert cached_for_study(STUDY_REFRESHED, 5, lambda: "in the request") == "in the request"


@pytest.mark.usefixtures("tasks_inline")
def test_a_figure_from_before_a_participant_left_is_never_shown_even_on_a_large_corpus(settings: Any) -> None:
    """Fails if a figure that may show a removed participant is shown while a task recomputes it."""
    settings.DASHBOARD_LARGE_PAIRS = 0
    assert cached(REFRESHED, EVERYTHING, lambda: "with them") == "with them"
    figure_cache.participant_removed(sender=None)
    assert cached(REFRESHED, EVERYTHING, lambda: "without them") == "without them"


FIGURE_MODELS = {
    "artifact-monitor": (MonitorRefresh,),
    "model-calibrations": (ModelAnnotator, Calibration),
    "writing-check-annotators": (ModelUse,),
    "worker-quality-page": (WorkerExclusion,),
}
DASHBOARD_SIGNALS = (post_save, post_delete, m2m_changed, gold_recounted_signal, participant_removed_signal)


def test_the_dashboards_ready_wires_each_kept_figures_receivers_once_for_its_own_models() -> None:
    """Fails if a receiver is wired under another name, for every model, or twice on a second ready()."""
    before, after = ready_again("dashboard", *DASHBOARD_SIGNALS)
    assert after == before
    saved, deleted = after[0], after[1]
    for figure, models in FIGURE_MODELS.items():
        for model in models:
            uid = f"dashboard-figure-{figure}-{model.__name__}"
            assert (uid, id(model)) in saved
            assert (f"{uid}-deleted", id(model)) in deleted
    assert ("dashboard-figures-out-of-date", id(None)) in after[3]
    assert ("dashboard-figures-without-them", id(None)) in after[4]


def wired_anew(signals: tuple[Signal, ...]) -> list[list[Any]]:
    """Unwire the dashboard's receivers, run its ready() again and let what it left unreferenced go;
    the receivers as they were, to be put back."""
    saved = [list(signal.receivers) for signal in signals]
    for signal in signals:
        with signal.lock:
            signal.receivers = [
                receiver
                for receiver in signal.receivers
                if not (isinstance(receiver[0][0], str) and receiver[0][0].startswith("dashboard-"))
            ]
            signal.sender_receivers_cache.clear()
    try:
        apps.get_app_config("dashboard").ready()
        gc.collect()
    except BaseException:
        put_back(signals, saved)
        raise
    return saved


def put_back(signals: tuple[Signal, ...], saved: list[list[Any]]) -> None:
    for signal, kept in zip(signals, saved, strict=True):
        with signal.lock:
            signal.receivers = kept
            signal.sender_receivers_cache.clear()


def test_the_receivers_ready_wires_mark_each_figure_when_its_own_rows_are_saved_or_deleted(
    make_worker: Callable[..., Any],
) -> None:
    """Fails if a wired receiver marks another figure, is none, or is let go once ready() returns."""
    saved = wired_anew(DASHBOARD_SIGNALS)
    try:
        dataset = factories.dataset("kept-wired")
        study = study_of(dataset, "kept-wired")
        annotator = annotator_of(dataset, "kept-wired")
        rows = {
            MonitorRefresh: MonitorRefresh(dataset=dataset, status=JobStatus.DONE),
            ModelAnnotator: ModelAnnotator(
                name="kept-wired-2",
                dataset=dataset,
                kind=AnnotatorKind.ENDPOINT,
                base_url=annotator.base_url,
                model_name="m",
            ),
            Calibration: Calibration(annotator=annotator, asked_with="v1", pairs=1, accuracy=0.5, figures={}),
            ModelUse: ModelUse(study=study),
            WorkerExclusion: WorkerExclusion(worker=make_worker(), team_id=dataset.team_id),
        }
        for figure, models in FIGURE_MODELS.items():
            for model in models:
                row = rows[model]
                for write in (row.save, row.delete):
                    cache.clear()
                    write()
                    marked = [name for name in FIGURE_MODELS if cache.get(rows_changed_key(name)) is not None]
                    assert marked == [figure], (model.__name__, write.__name__)
        cache.clear()
        gold_recounted_signal.send(sender=None)
        assert cache.get(FIGURES_CHANGED_KEY) is not None
        cache.clear()
        participant_removed_signal.send(sender=None)
        assert cache.get(PEOPLE_CHANGED_KEY) is not None
    finally:
        put_back(DASHBOARD_SIGNALS, saved)


def study_of(dataset: Any, slug: str) -> Study:
    return Study.objects.create(slug=slug, name="s", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="C")


def test_the_annotators_studies_chose_for_writing_checks_are_each_named_once() -> None:
    """Fails if the chosen annotators are read as the uses' own ids, as rows, or with the unchosen ones."""
    dataset = factories.dataset("kept-chosen")
    first, second = annotator_of(dataset, "kept-chosen-1"), annotator_of(dataset, "kept-chosen-2")
    ModelUse.objects.create(study=study_of(dataset, "kept-chosen-none"))
    for n, annotator in enumerate((second, second, first)):
        ModelUse.objects.create(study=study_of(dataset, f"kept-chosen-{n}"), writing_checks_annotator=annotator)
    assert writing_check_annotators() == sorted([first.pk, second.pk])


@pytest.mark.usefixtures("kept_long")
def test_the_workers_page_counts_no_checks_while_no_study_checks_writing_and_then_only_the_checks(
    make_worker: Callable[..., Any],
) -> None:
    """Fails if the writers' checks are counted with no checker chosen, or the kept choice is read again."""
    dataset = factories.dataset("kept-count")
    annotator = annotator_of(dataset, "kept-count")
    writer = make_worker()
    pair = factories.pair(
        dataset, factories.premise(dataset, factories.genre("fiction")), [Label.ENTAILMENT], author=writer
    )
    WritingCheck.objects.create(
        annotator=annotator, pair=pair, asked_with="writing-v1", outcome=Outcome.LABELLED, verdict=Verdict.FITS
    )
    use = ModelUse.objects.create(study=study_of(dataset, "kept-count"))
    with CaptureQueriesContext(connection) as unchosen:
        assert queries.checks_by_writer([writer.pk]) == {}
    assert f'"{WritingCheck._meta.db_table}"' not in " ".join(query["sql"] for query in unchosen.captured_queries)

    use.writing_checks_annotator = annotator
    use.save()
    assert queries.checks_by_writer([writer.pk]) == {writer.pk: {"checked": 1, "flagged": 0}}
    with CaptureQueriesContext(connection) as again:
        assert queries.checks_by_writer([writer.pk]) == {writer.pk: {"checked": 1, "flagged": 0}}
    assert len(again) == 1
    assert f'"{ModelUse._meta.db_table}"' not in again.captured_queries[0]["sql"]


def test_each_flagged_writer_of_the_monitor_carries_their_typing_record_and_its_flagged_share(
    make_worker: Callable[..., Any],
) -> None:
    """Fails if a flagged writer's typing record or flagged share is missing, miscounted, or divides by nothing."""
    dataset = factories.dataset("kept-typing")
    typist, clean, only_scored, unrecorded, unflagged = (make_worker() for _ in range(5))
    typed(dataset, None, typist, utc_today(), flagged=True)
    typed(dataset, None, typist, utc_today(), flagged=False, n=3)
    typed(dataset, None, clean, utc_today(), flagged=False, n=2)
    typed(dataset, None, unflagged, utc_today(), flagged=True)
    scored(only_scored, dataset, low=True)  # a record of sense, none of typing
    writers = [{"writer": worker.pk, "flagged": True} for worker in (typist, clean, only_scored, unrecorded)]
    MonitorRefresh.objects.create(
        dataset=dataset, status=JobStatus.DONE, writers=[*writers, {"writer": unflagged.pk, "flagged": False}]
    )

    flagged = artifact_queries.monitor_overview(Scope.of_dataset(dataset))["flagged"]

    shown = {
        writer["writer"]: (
            writer["typing"] and (writer["typing"]["written"], writer["typing"]["flagged"]),
            writer["typing_flagged_share"],
        )
        for writer in flagged
    }
    assert shown == {
        typist.pk: ((4, 1), 0.25),
        clean.pk: ((2, 0), 0.0),
        only_scored.pk: ((0, 0), None),
        unrecorded.pk: (None, None),
    }
