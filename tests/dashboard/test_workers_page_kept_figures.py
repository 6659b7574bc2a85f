"""The workers page keeps the artifact monitor, the model annotators' calibrations, which
annotators check writing and the page of worker-quality rows in the figure cache, and each is out
of date the moment its own rows are written: a refresh, an annotator or a calibration saved or
deleted, a study choosing a writing checker, an exclusion, shows on the next page however long the
cache's interval, while a page asked again within it reads none of them. The correlated groups are
kept per set of latest finished runs: a newer run shows at once; the page's writers' typing per
page of writers, for the cache's interval."""

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from artifacts.models import MonitorRefresh
from authorship.selectors import typing_flags_by_worker
from base.long_tasks import JobStatus
from corpus.models import Dataset, Label, Worker, WorkerExclusion
from corpus.scope import Scope
from crowd.models import Study, TaskKind
from dashboard.queries import model_annotators as queries
from dashboard.queries import workers as workers_queries
from dashboard.queries.quality import worker_quality_page
from model_annotators.models import AnnotatorKind, Calibration, ModelAnnotator, ModelUse, Outcome, Verdict, WritingCheck
from quality.models import CorrelatedWorkerGroup, WorkerFlagRow
from teams.models import Team
from tests import factories
from tests.authorship.test_researcher_views import write_with_one_pasted
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.quality.test_mutants_correlated_runs import a_run, stored_group

from . import cost_factories

pytestmark = pytest.mark.django_db

E = Label.ENTAILMENT


@pytest.fixture(autouse=True)
def long_interval(settings: Any) -> None:
    settings.DASHBOARD_CACHE_SECONDS = 3600  # only a write of the figure's own rows moves it


def page(client: Any, dataset: Dataset) -> str:
    response = client.get("/dashboard/workers/", {"dataset": dataset.slug})
    assert response.status_code == 200
    return str(response.content.decode())


def annotator_of(dataset: Dataset, name: str) -> ModelAnnotator:
    return ModelAnnotator.objects.create(
        name=name, dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )


def test_an_annotator_and_its_calibration_show_as_soon_as_they_are_written(client: Any, researcher: Any) -> None:
    dataset = factories.dataset("kept-calibrations")
    client.force_login(researcher)
    assert "No model annotator in this scope." in page(client, dataset)

    annotator = annotator_of(dataset, "kept-annotator")
    shown = page(client, dataset)
    assert f'data-annotator="{annotator.pk}"' in shown and "not calibrated yet" in shown

    Calibration.objects.create(annotator=annotator, asked_with="validation-v1", pairs=40, accuracy=0.625, figures={})
    assert '<td class="num" data-stat="accuracy">0.625</td>' in page(client, dataset)

    annotator.delete()
    assert "No model annotator in this scope." in page(client, dataset)


def test_a_monitor_refresh_shows_as_soon_as_it_is_written(client: Any, researcher: Any) -> None:
    dataset = factories.dataset("kept-monitor")
    client.force_login(researcher)
    assert 'id="monitor-empty"' in page(client, dataset)

    refresh = MonitorRefresh.objects.create(dataset=dataset, status=JobStatus.RUNNING, pairs=50, folds=5)
    assert 'id="monitor-empty"' in page(client, dataset)  # a refresh still running is not shown

    refresh.status = JobStatus.DONE
    refresh.overall = {"accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6, "majority": 0.34, "majority_label": E}
    refresh.save()
    shown = page(client, dataset)
    assert 'id="monitor-overall"' in shown and 'data-value="0.5"' in shown

    refresh.delete()
    assert 'id="monitor-empty"' in page(client, dataset)


def test_a_study_choosing_a_writing_checker_counts_its_writers_checks_at_once(make_worker: Callable[..., Any]) -> None:
    dataset = factories.dataset("kept-checker")
    annotator = annotator_of(dataset, "kept-checker")
    writer = make_worker()
    pair = factories.pair(dataset, factories.premise(dataset, factories.genre("fiction")), [E], author=writer)
    WritingCheck.objects.create(
        annotator=annotator, pair=pair, asked_with="writing-v1", outcome=Outcome.LABELLED, verdict=Verdict.NONSENSE
    )
    study = Study.objects.create(
        slug="kept-checker", name="s", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="C"
    )
    use = ModelUse.objects.create(study=study)
    with CaptureQueriesContext(connection) as unchosen:
        assert queries.checks_by_writer([writer.pk]) == {}
    assert len(unchosen) == 1  # which annotators check writing; nothing to count

    use.writing_checks_annotator = annotator
    use.save()
    assert queries.checks_by_writer([writer.pk]) == {writer.pk: {"checked": 1, "flagged": 1}}

    use.delete()
    assert queries.checks_by_writer([writer.pk]) == {}


def test_an_exclusion_shows_on_the_kept_quality_rows_as_soon_as_it_is_written() -> None:
    dataset, *_ = cost_factories.build("kept-quality", prefix="kq-")
    scope = Scope.of_dataset(dataset)
    page, _, excluded = worker_quality_page(scope, 1, 2)
    assert excluded == set() and page.paginator.count == 5 and len(page.object_list) == 2
    shown = [row.worker.pk for row in page.object_list]

    exclusion = WorkerExclusion.objects.create(worker=Worker.objects.get(pk=shown[1]), team_id=dataset.team_id)
    assert worker_quality_page(scope, 1, 2)[2] == {shown[1]}
    exclusion.delete()
    assert worker_quality_page(scope, 1, 2)[2] == set()


def test_each_page_of_the_quality_rows_is_its_own_whether_computed_now_or_kept() -> None:
    dataset, *_ = cost_factories.build("kept-pages", prefix="kp-")
    scope = Scope.of_dataset(dataset)
    computed_now, _, _ = worker_quality_page(scope, 2, 2)  # no kept rows yet: computed in the request
    kept_first, _, _ = worker_quality_page(scope, 1, 2)
    kept_again, _, _ = worker_quality_page(scope, 1, 2)
    kept_second, _, _ = worker_quality_page(scope, 2, 2)
    assert (computed_now.number, kept_first.number, kept_second.number) == (2, 1, 2)
    first = [row.worker.pk for row in kept_first.object_list]
    second = [row.worker.pk for row in kept_second.object_list]
    assert [row.worker.pk for row in kept_again.object_list] == first and len(first) == len(second) == 2
    assert [row.worker.pk for row in computed_now.object_list] == second
    assert not set(first) & set(second)


def test_a_teams_quality_rows_mark_only_its_own_teams_exclusions() -> None:
    dataset, *_ = cost_factories.build("kept-team", prefix="kt-")
    scope = Scope.of_teams([dataset.team_id])
    page, _, _ = worker_quality_page(scope, 1, 5)
    shown = [row.worker.pk for row in page.object_list]
    elsewhere = Team.objects.create(slug="kept-elsewhere", name="Elsewhere")
    WorkerExclusion.objects.create(worker=Worker.objects.get(pk=shown[0]), team=elsewhere)
    WorkerExclusion.objects.create(worker=Worker.objects.get(pk=shown[1]), team_id=dataset.team_id)
    for _ in range(2):  # computed, then kept
        assert worker_quality_page(scope, 1, 5)[2] == {shown[1]}


def test_a_page_asked_again_reads_none_of_the_kept_figures(client: Any, researcher: Any) -> None:
    dataset, *_ = cost_factories.build("kept-again", prefix="ka-")
    annotator_of(dataset, "kept-again")
    MonitorRefresh.objects.create(dataset=dataset, status=JobStatus.DONE, overall={"accuracy": 0.5})
    client.force_login(researcher)
    page(client, dataset)  # the quality rows computed
    page(client, dataset)  # their first page kept
    with CaptureQueriesContext(connection) as again:
        shown = page(client, dataset)
    assert f'data-worker="{Worker.objects.order_by("pk").first().pk}"' in shown  # type: ignore[union-attr]
    statements = " ".join(query["sql"] for query in again.captured_queries)
    for table in (
        MonitorRefresh._meta.db_table,
        ModelAnnotator._meta.db_table,
        Calibration._meta.db_table,
        ModelUse._meta.db_table,
    ):
        assert f'"{table}"' not in statements, table
    # The quality rows are counted with their time; none is read.
    assert f'"{WorkerFlagRow._meta.db_table}"."figures"' not in statements


def test_a_newer_finished_runs_groups_show_at_once_and_a_run_s_groups_are_read_once(
    client: Any, researcher: Any, make_worker: Callable[..., Any]
) -> None:
    dataset = factories.dataset("kept-groups")
    first, second, third = (make_worker(username=f"kept-member-{n}") for n in range(3))
    client.force_login(researcher)
    assert "No correlated group in the latest aggregation runs." in page(client, dataset)

    earlier = a_run(dataset, JobStatus.DONE)
    stored_group(earlier, 1, first, second)
    shown = page(client, dataset)
    assert f'data-run="{earlier.pk}"' in shown
    assert f'<span data-worker="{first.pk}">kept-member-0</span>, <span data-worker="{second.pk}">' in shown
    with CaptureQueriesContext(connection) as again:
        assert f'data-run="{earlier.pk}"' in page(client, dataset)
    statements = " ".join(query["sql"] for query in again.captured_queries)
    assert f'"{CorrelatedWorkerGroup._meta.db_table}"' not in statements  # the run's groups are kept

    running = a_run(dataset, JobStatus.RUNNING)
    stored_group(running, 1, third)
    assert f'data-run="{running.pk}"' not in page(client, dataset)  # a run still fitting is not shown

    running.status = JobStatus.DONE
    running.save()
    shown = page(client, dataset)
    assert f'data-run="{running.pk}"' in shown and f'data-run="{earlier.pk}"' not in shown
    assert f'<span data-worker="{third.pk}">kept-member-2</span>' in shown

    running.delete()
    assert f'data-run="{earlier.pk}"' in page(client, dataset)  # the earlier run is the latest again


def test_the_writers_typing_is_kept_per_page_of_writers_for_the_caches_interval(
    make_worker: Callable[..., Any], settings: Any
) -> None:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    writer, other = make_worker(username="kept-paster"), make_worker(username="kept-other")
    write_with_one_pasted(writer)
    typed = {"written": 3, "flagged": 1, "no_evidence": 0}
    assert workers_queries.typing_of_writers([writer.pk, other.pk]) == {writer.pk: typed}
    assert workers_queries.typing_of_writers([]) == {}

    write_with_one_pasted(other)
    with CaptureQueriesContext(connection) as again:
        assert workers_queries.typing_of_writers([writer.pk, other.pk]) == {writer.pk: typed}  # kept
    assert not again.captured_queries
    # Another page of writers is its own figure, read now.
    other_typed = typing_flags_by_worker([other.pk])[other.pk]
    assert other_typed["written"] == 3
    assert workers_queries.typing_of_writers([other.pk]) == {other.pk: other_typed}
    settings.DASHBOARD_CACHE_SECONDS = 0  # no interval: every page reads the tally
    assert workers_queries.typing_of_writers([writer.pk, other.pk]) == {writer.pk: typed, other.pk: other_typed}
