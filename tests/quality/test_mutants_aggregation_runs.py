"""Aggregation runs as they are stored, on a small dataset made here (docs/checks.md, "library
mutants"): which methods a run fits, who started it and what the audit log says, which datasets the
beat aggregates, which labels count and how a worker is named, every pair's label, posterior, gold
and difference and every worker's skill, label count and confusion as the models gave them, the
run's counts and figures, a run that fails with its reason and its progress where it stopped, and
the dashboard's reads in their order."""

import logging
import random
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone
from pytest_django import DjangoAssertNumQueries

from audit.models import AuditEntry
from base.long_tasks import JobStatus
from bench.gold_flip_replay import BOT_PREFIX, label_table, read_pairs
from corpus.labels import NO_GOLD
from corpus.models import Dataset, Pair, Premise, ValidationLabel, Worker
from crowd.models import Study, TaskKind
from quality import aggregation, aggregation_runs
from quality.models import AggregatedLabel, AggregationRun, CorrelatedWorkerGroup, GroupDecidedPair, WorkerEstimate
from tests import factories
from tests.conftest import shared_file
from tests.quality.test_correlated_errors import load_into_database

pytestmark = pytest.mark.django_db

E, N, C = "entailment", "neutral", "contradiction"


# --- which methods, who asked ------------------------------------------------------------------------------


def test_the_methods_default_to_dawid_skene_and_mace_and_always_include_dawid_skene():
    assert aggregation_runs.normalize_methods(None) == ["dawid_skene", "mace"]
    assert aggregation_runs.normalize_methods([]) == ["dawid_skene", "mace"]
    assert aggregation_runs.normalize_methods(["mace", "glad", "mace"]) == ["dawid_skene", "mace", "glad"]
    assert aggregation_runs.normalize_methods(["glad", "dawid_skene"]) == ["glad", "dawid_skene"]


def test_unknown_methods_are_named_in_the_refusal():
    with pytest.raises(ValidationError) as refused:
        aggregation_runs.normalize_methods(["mace", "magic", "dawid_skene", "voodoo"])
    assert refused.value.message_dict == {
        "methods": ["unknown method(s): magic, voodoo; choose from dawid_skene, mace, glad"]
    }


def test_a_researchers_run_is_queued_once_and_audited(researcher, django_capture_on_commit_callbacks):
    dataset = factories.dataset("asked")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        run = aggregation_runs.request_aggregation(researcher, dataset, ["glad"])
    assert len(queued) == 1
    run.refresh_from_db()
    assert (run.dataset, run.methods, run.created_by, run.status) == (
        dataset,
        ["dawid_skene", "glad"],
        researcher,
        JobStatus.PENDING,
    )
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_id, entry.subject_type, entry.subject_id, entry.subject) == (
        "aggregation.started",
        researcher.pk,
        "quality.aggregationrun",
        str(run.pk),
        f"aggregation run {run.pk} of asked",
    )
    assert (entry.team_id, entry.after, entry.dataset_slugs) == (dataset.team_id, {"methods": run.methods}, ["asked"])


def test_a_run_nobody_started_is_not_in_the_audit_log(django_capture_on_commit_callbacks):
    from django.contrib.auth.models import AnonymousUser

    dataset = factories.dataset("beat")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        by_beat = aggregation_runs.request_aggregation(None, dataset)
        anonymous = aggregation_runs.request_aggregation(AnonymousUser(), dataset, ["mace"])
    assert len(queued) == 2
    assert [(run.created_by, run.methods) for run in (by_beat, anonymous)] == [
        (None, ["dawid_skene", "mace"]),
        (None, ["dawid_skene", "mace"]),
    ]
    assert not AuditEntry.objects.exists()


def test_a_requested_run_runs_once_its_row_is_committed(settings, django_capture_on_commit_callbacks):
    """The queued task is the aggregation of this run: inline, the run has its answer at commit."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    dataset = factories.dataset("queued")
    factories.pair(dataset, factories.premise(dataset), [N])
    with django_capture_on_commit_callbacks(execute=True) as queued:
        run = aggregation_runs.request_aggregation(None, dataset)
    assert len(queued) == 1
    run.refresh_from_db()
    assert (run.status, run.error) == (JobStatus.FAILED, "dataset queued has no pairs with 2 or more counted labels")


# --- which datasets the beat aggregates ---------------------------------------------------------------------


def labelled_dataset(slug: str, holds_codes: bool | None = True, labels: bool = True) -> Dataset:
    dataset = factories.dataset(slug)
    if labels:
        factories.pair(dataset, factories.premise(dataset), [N, N, E])
    if holds_codes is not None:
        Study.objects.create(
            slug=slug,
            name=slug,
            dataset=dataset,
            task_kind=TaskKind.VALIDATION,
            completion_code="DONE",
            hold_code_at_chance=holds_codes,
        )
    return dataset


def labels_written(dataset: Dataset, at: datetime) -> None:
    ValidationLabel.objects.filter(pair__dataset=dataset).update(created_at=at)


def finished_run(dataset: Dataset, read_from: datetime | None, status: str = JobStatus.DONE) -> AggregationRun:
    run = AggregationRun.objects.create(
        dataset=dataset, status=status, started_at=read_from, finished_at=timezone.now()
    )
    if read_from is None:
        AggregationRun.objects.filter(pk=run.pk).update(created_at=timezone.now() + timedelta(hours=1))
    return run


def test_the_beat_aggregates_code_holding_datasets_whose_labels_are_newer_than_their_latest_run():
    now = timezone.now()
    before, after = now - timedelta(hours=2), now + timedelta(hours=2)
    never_run = labelled_dataset("never-run")
    no_labels = labelled_dataset("no-labels", labels=False)
    no_codes = labelled_dataset("no-codes", holds_codes=False)
    no_study = labelled_dataset("no-study", holds_codes=None)
    read_all = labelled_dataset("read-all")
    finished_run(read_all, after)
    newer_labels = labelled_dataset("newer-labels")
    finished_run(newer_labels, before)
    failed_after = labelled_dataset("failed-after")
    finished_run(failed_after, after, status=JobStatus.FAILED)
    created_after = labelled_dataset("created-after")  # a run that never started: its creation counts
    finished_run(created_after, None)
    # The latest read decides, not the latest row: a later row that read earlier does not.
    latest_read = labelled_dataset("latest-read")
    finished_run(latest_read, after)
    finished_run(latest_read, before)
    older_read_last = labelled_dataset("older-read-last")
    finished_run(older_read_last, before)
    finished_run(older_read_last, before - timedelta(hours=1))
    unfinished = labelled_dataset("unfinished")  # a run stopped without finishing reads nothing
    AggregationRun.objects.create(dataset=unfinished, status=JobStatus.FAILED, started_at=after)
    pending = labelled_dataset("pending")
    AggregationRun.objects.create(dataset=pending, status=JobStatus.PENDING)
    running = labelled_dataset("running")
    AggregationRun.objects.create(dataset=running, status=JobStatus.RUNNING, started_at=before)
    for dataset in Dataset.objects.all():
        labels_written(dataset, now)

    due = list(aggregation_runs.datasets_due_for_aggregation())
    assert due == [never_run, newer_labels, older_read_last, unfinished]
    assert {no_labels, no_codes, no_study, read_all, failed_after, created_after, latest_read}.isdisjoint(due)
    assert {pending, running}.isdisjoint(due)

    runs = aggregation_runs.aggregate_changed_datasets()
    assert [(run.dataset, run.methods, run.created_by, run.status) for run in runs] == [
        (dataset, ["dawid_skene", "mace"], None, JobStatus.PENDING) for dataset in due
    ]
    assert list(aggregation_runs.datasets_due_for_aggregation()) == []


# --- which labels count -----------------------------------------------------------------------------------


@pytest.fixture
def labelled(make_worker):
    """Nine pairs of five labels (three careful workers, one who always says neutral, the fifth
    label an anonymous import), one pair split 2-2-1, one with the author's label only, and one
    whose second label is an excluded worker's."""
    dataset = factories.dataset("small")
    careful = [make_worker(username=f"careful{index}") for index in range(3)]
    lazy = make_worker(username="lazy")
    excluded = make_worker(username="excluded")
    for number in range(9):
        truth = (E, N, C)[number % 3]
        factories.pair(
            dataset,
            factories.premise(dataset),
            [truth, truth, truth, N, truth],
            author=careful[0],
            validators=[*careful[1:], lazy],
        )
    split = factories.pair(
        dataset, factories.premise(dataset), [E, E, C, C, N], author=careful[0], validators=[*careful[1:], lazy]
    )
    lonely = factories.pair(dataset, factories.premise(dataset), [E], author=careful[0])
    shunned = factories.pair(dataset, factories.premise(dataset), [E, E], author=careful[0], validators=[excluded])
    factories.exclude([excluded])
    return dataset, careful, lazy, excluded, split, lonely, shunned


def test_the_counted_labels_name_workers_by_id_and_anonymous_labels_by_their_own(labelled):
    dataset, careful, lazy, excluded, split, lonely, shunned = labelled
    data = aggregation_runs.counted_labels(dataset)
    assert list(data.columns) == ["task", "worker", "label"]
    assert list(data.index) == list(range(len(data))) == list(range(50))
    anonymous = ValidationLabel.objects.filter(pair__dataset=dataset, worker__isnull=True)
    expected = {(label.pair_id, f"anon-{label.pk}", label.label) for label in anonymous}
    for worker in [*careful, lazy]:
        expected |= {
            (label.pair_id, str(worker.pk), label.label) for label in worker.labels.exclude(pair__in=[lonely, shunned])
        }
    assert len(expected) == 50 and set(data.itertuples(index=False, name=None)) == expected
    assert {lonely.pk, shunned.pk}.isdisjoint(set(data["task"]))
    assert str(excluded.pk) not in set(data["worker"])
    assert (data["task"] == split.pk).sum() == 5


def test_the_counted_labels_are_the_datasets_own_only():
    mine, other = factories.dataset("mine"), factories.dataset("other")
    kept = factories.pair(mine, factories.premise(mine), [N, E])  # two labels are enough
    factories.pair(other, factories.premise(other), [E, E, E])
    data = aggregation_runs.counted_labels(mine)
    assert set(data["task"]) == {kept.pk} and len(data) == 2


def test_a_dataset_without_labels_reads_an_empty_table_of_the_three_columns():
    data = aggregation_runs.counted_labels(factories.dataset("nothing"))
    assert data.empty and list(data.columns) == ["task", "worker", "label"]


# --- a run's results -----------------------------------------------------------------------------------


def test_a_run_stores_what_each_model_says_of_each_pair_and_worker(labelled):
    dataset, careful, lazy, _, split, _, _ = labelled
    data = aggregation_runs.counted_labels(dataset)
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "mace"])
    done = aggregation_runs.run_aggregation(run.pk)
    assert done is not None and done.pk == run.pk
    run.refresh_from_db()
    assert (run.status, run.progress, run.stage, run.error) == (JobStatus.DONE, 1.0, "", "")
    assert run.started_at is not None and run.finished_at is not None and run.finished_at >= run.started_at
    assert (run.pair_count, run.label_count, run.worker_count) == (10, 50, 4)

    gold = dict(Pair.objects.filter(dataset=dataset).values_list("pk", "gold_label"))
    assert gold[split.pk] == NO_GOLD
    for method in ("dawid_skene", "mace"):
        fitted = aggregation.AGGREGATORS[method](data)
        assert fitted.posterior is not None and fitted.worker_skill is not None
        rows = {row.pair_id: row for row in AggregatedLabel.objects.filter(run=run, method=method)}
        assert set(rows) == set(data["task"])
        for pair_id, row in rows.items():
            assert row.label == fitted.labels[pair_id] and row.gold_label == gold[pair_id]
            assert row.posterior == pytest.approx(float(fitted.posterior[pair_id]))
            assert row.differs == (row.label != gold[pair_id])
        differing = [row for row in rows.values() if row.differs]
        resolved = [row for row in differing if row.gold_label == NO_GOLD]
        figures = dict(run.figures[method])
        assert isinstance(figures.pop("seconds"), float)
        assert figures == {
            "skill_meaning": fitted.skill_meaning,
            "pairs": 10,
            "agree_with_gold": 10 - len(differing),
            "overrules": len(differing) - len(resolved),
            "resolves": len(resolved),
        }
        estimates = {estimate.worker_id: estimate for estimate in WorkerEstimate.objects.filter(run=run, method=method)}
        assert set(estimates) == {worker.pk for worker in [*careful, lazy]}
        for worker_id, estimate in estimates.items():
            assert estimate.skill == pytest.approx(float(fitted.worker_skill[str(worker_id)]))
            assert estimate.labels == (data["worker"] == str(worker_id)).sum() == 10
        if method == "mace":
            assert all(estimate.confusion is None for estimate in estimates.values())
        else:
            assert fitted.worker_confusion is not None
            table = fitted.worker_confusion.loc[str(lazy.pk)]
            confusion = estimates[lazy.pk].confusion
            assert confusion == {
                true: {given: round(float(table.loc[given, true]), 4) for given in table.index}
                for true in table.columns
            }
            assert confusion[E][N] > 0.5 and set(confusion) == {E, N, C}
    # The pair the model resolves is one where the 3-of-5 gold is "-"; the lazy worker ranks last.
    assert run.figures["dawid_skene"]["resolves"] == 1
    assert AggregatedLabel.objects.get(run=run, method="dawid_skene", pair=split).differs
    assert aggregation_runs.ranked_workers(run)[-1].worker == lazy
    assert set(run.figures["timing"]) == {"read_seconds", "write_seconds"}
    assert all(isinstance(value, float) for value in run.figures["timing"].values())
    assert run.figures["correlated"]["groups"] == 0 and run.figures["correlated"]["pairs_to_adjudicate"] == 0
    assert run.figures["stopped_confident"] == 0
    assert aggregation_runs.run_aggregation(run.pk) is None  # done: never fitted twice


def test_a_method_without_posteriors_or_workers_stores_certain_labels_and_no_estimates(labelled):
    dataset, *_ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["majority_vote"])
    aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    rows = AggregatedLabel.objects.filter(run=run, method="majority_vote")
    assert rows.count() == 10 and {row.posterior for row in rows} == {1.0}
    assert {row.differs for row in rows} == {False}  # the majority vote is the gold
    assert not WorkerEstimate.objects.filter(run=run).exists()
    assert run.figures["majority_vote"]["skill_meaning"] == ""
    assert run.figures["majority_vote"]["agree_with_gold"] == 10


def test_a_failed_fit_keeps_no_results_says_why_and_where_it_stopped(labelled):
    dataset, *_ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "magic"])
    with pytest.raises(KeyError):
        aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    assert (run.status, run.stage, run.error) == (JobStatus.FAILED, "", "KeyError: 'magic'")
    assert run.progress == pytest.approx(0.1 + 0.7 * 1 / 2)
    assert run.finished_at is not None
    assert not AggregatedLabel.objects.filter(run=run).exists() and not WorkerEstimate.objects.exists()


def test_a_fit_failing_at_its_first_method_stopped_at_the_first_stage(labelled):
    dataset, *_ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["magic", "dawid_skene"])
    with pytest.raises(KeyError):
        aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    assert (run.status, run.error) == (JobStatus.FAILED, "KeyError: 'magic'")
    assert run.progress == pytest.approx(0.1)


def test_a_dataset_with_nothing_to_fit_fails_with_the_answer_and_no_crash():
    dataset = factories.dataset("only-authors")
    factories.pair(dataset, factories.premise(dataset), [N])
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    answered = aggregation_runs.run_aggregation(run.pk)
    assert answered is not None
    assert (answered.status, answered.stage, answered.error) == (
        JobStatus.FAILED,
        "",
        "dataset only-authors has no pairs with 2 or more counted labels",
    )
    assert answered.finished_at is not None and "stopped_confident" not in answered.figures


def test_a_process_writes_its_outcome_only_on_the_run_it_still_holds():
    """A run the reaper restarted or that is no longer running, and any other running run, keep
    their state when a process that fitted an older holding of the run finishes."""
    dataset = factories.dataset("taken")
    factories.pair(dataset, factories.premise(dataset), [N])
    restarted = AggregationRun.objects.create(dataset=dataset, status=JobStatus.RUNNING, restarts=1)
    finished = AggregationRun.objects.create(dataset=dataset, status=JobStatus.DONE, restarts=0)
    other = AggregationRun.objects.create(dataset=dataset, status=JobStatus.RUNNING, restarts=0)
    for run in (restarted, finished):
        stale = AggregationRun.objects.get(pk=run.pk)
        stale.restarts = 0
        aggregation_runs._fit_claimed(stale)
    assert [AggregationRun.objects.get(pk=run.pk).status for run in (restarted, finished, other)] == [
        JobStatus.RUNNING,
        JobStatus.DONE,
        JobStatus.RUNNING,
    ]


def test_a_stage_never_reports_a_running_run_as_complete():
    run = AggregationRun.objects.create(dataset=factories.dataset("stages"), status=JobStatus.RUNNING)
    aggregation_runs._stage(run, "fitting mace", 0.45)
    run.refresh_from_db()
    assert (run.stage, run.progress) == ("fitting mace", 0.45)
    aggregation_runs._stage(run, "saving results", 1.5)
    run.refresh_from_db()
    assert (run.stage, run.progress) == ("saving results", 0.99)


# --- the dashboard's reads -----------------------------------------------------------------------------------


def stored(run: AggregationRun, method: str, pair: Pair, posterior: float, differs: bool) -> None:
    AggregatedLabel.objects.create(
        run=run, method=method, pair=pair, label=N, posterior=posterior, gold_label=E, differs=differs
    )


def test_the_disagreements_of_a_method_are_most_confident_first(labelled, django_assert_num_queries):
    dataset, *_ = labelled
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk"))
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "mace"])
    other = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    stored(run, "dawid_skene", pairs[3], 0.7, True)  # stored before the tie it follows
    stored(run, "dawid_skene", pairs[1], 0.9, True)
    stored(run, "dawid_skene", pairs[2], 0.99, False)
    stored(run, "dawid_skene", pairs[0], 0.7, True)
    stored(run, "mace", pairs[4], 0.95, True)
    stored(other, "dawid_skene", pairs[5], 0.8, True)
    assert [row.pair for row in aggregation_runs.disagreements(run)] == [pairs[1], pairs[0], pairs[3]]
    assert [row.pair for row in aggregation_runs.disagreements(run, "mace")] == [pairs[4]]
    premises = [pair.premise for pair in (pairs[1], pairs[0], pairs[3])]
    with django_assert_num_queries(1):  # the page shows each pair's premise without a query a row
        assert [row.pair.premise for row in aggregation_runs.disagreements(run)] == premises


def test_the_workers_rank_by_skill_then_id_up_to_the_limit(make_worker):
    dataset = factories.dataset("ranked")
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "mace"])
    workers: list[Worker] = [make_worker(username=f"ranked{index}") for index in range(4)]
    for worker, skill in zip(workers, [0.5, 0.9, 0.5, 0.7], strict=True):
        WorkerEstimate.objects.create(run=run, method="dawid_skene", worker=worker, skill=skill, labels=3)
    WorkerEstimate.objects.create(run=run, method="mace", worker=workers[0], skill=0.99, labels=3)
    ranked = aggregation_runs.ranked_workers(run)
    assert [estimate.worker for estimate in ranked] == [workers[1], workers[3], workers[0], workers[2]]
    assert ranked[0].worker.user.username == "ranked1"
    assert [estimate.worker for estimate in aggregation_runs.ranked_workers(run, limit=2)] == workers[1:4:2]
    assert [estimate.worker for estimate in aggregation_runs.ranked_workers(run, "mace")] == [workers[0]]
    assert len(aggregation_runs.ranked_workers(run, limit=200)) == 4


# --- what the dashboard sees while a run works, and the run's timings ------------------------------------

Labelled = tuple[Dataset, list[Worker], Worker, Worker, Pair, Pair, Pair]


def record_stage_changes(run: AggregationRun) -> None:
    """Every change of the run's stage or progress, as another reader would poll it, kept in a table
    by a trigger (made in the test's transaction, so it goes with it)."""
    table = AggregationRun._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE seen_stages (id serial PRIMARY KEY, stage text, progress double precision)")
        cursor.execute(
            """CREATE FUNCTION record_seen_stage() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.stage IS DISTINCT FROM OLD.stage OR NEW.progress IS DISTINCT FROM OLD.progress THEN
                    INSERT INTO seen_stages (stage, progress) VALUES (NEW.stage, NEW.progress);
                END IF;
                RETURN NEW;
            END $$"""
        )
        cursor.execute(
            f"CREATE TRIGGER record_seen_stage AFTER UPDATE ON {table} FOR EACH ROW "
            f"WHEN (NEW.id = {int(run.pk)}) EXECUTE FUNCTION record_seen_stage()"
        )


def seen_stages() -> list[tuple[str, float]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT stage, progress FROM seen_stages ORDER BY id")
        return [(stage, round(progress, 6)) for stage, progress in cursor.fetchall()]


def test_a_run_shows_each_stage_in_order_with_its_progress(labelled: Labelled) -> None:
    dataset, *_ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "mace"])
    record_stage_changes(run)
    aggregation_runs.run_aggregation(run.pk)
    assert seen_stages() == [
        ("reading labels", 0.0),
        ("fitting dawid_skene", 0.1),
        ("fitting mace", 0.45),
        ("checking correlated errors", 0.8),
        ("saving results", 0.85),
        ("", 1.0),
    ]


def test_a_runs_timings_are_hundredths_of_a_second_within_the_run(labelled: Labelled) -> None:
    """Each timing the run stores is a duration measured inside the run: not negative, no longer
    than the run's own span from start to finish, and rounded to hundredths of a second."""
    dataset, *_ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "mace"])
    aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    assert run.started_at is not None and run.finished_at is not None
    span = (run.finished_at - run.started_at).total_seconds()
    timings = [
        run.figures["timing"]["read_seconds"],
        run.figures["timing"]["write_seconds"],
        run.figures["dawid_skene"]["seconds"],
        run.figures["mace"]["seconds"],
    ]
    for seconds in timings:
        assert 0 <= seconds <= span + 0.01
        assert seconds == round(seconds, 2)
    assert sum(timings) <= span + 0.04


# --- a run the reaper restarted, what the caller gets back ----------------------


def test_a_run_restarted_while_this_process_fitted_it_keeps_none_of_its_results(
    labelled: Labelled, caplog: pytest.LogCaptureFixture
) -> None:
    """The reaper restarted the run (its `restarts` counted up) while this process still fitted the
    older holding: the process writes no pair, worker or outcome over the restart's and says so."""
    dataset, *_ = labelled
    run = AggregationRun.objects.create(
        dataset=dataset,
        methods=["dawid_skene"],
        status=JobStatus.RUNNING,
        restarts=1,
        figures={"kept": 1},
        stage="reading labels",
        progress=0.0,
    )
    stale = AggregationRun.objects.get(pk=run.pk)
    stale.restarts = 0
    with caplog.at_level(logging.WARNING, logger="quality.aggregation_runs"):
        assert aggregation_runs._fit_claimed(stale) is None
    run.refresh_from_db()
    # Nor its stages: the restart's page shows the restart's own stage, not the stale fit's.
    assert (run.status, run.restarts, run.figures, run.error, run.finished_at, run.stage, run.progress) == (
        JobStatus.RUNNING,
        1,
        {"kept": 1},
        "",
        None,
        "reading labels",
        0.0,
    )
    assert not AggregatedLabel.objects.filter(run=run).exists() and not WorkerEstimate.objects.exists()
    warnings = [record for record in caplog.records if record.name == "quality.aggregation_runs"]
    assert [(record.levelno, record.getMessage()) for record in warnings] == [
        (
            logging.WARNING,
            f"aggregation run {run.pk} was started again by the reaper; this process's results were dropped",
        )
    ]


def test_a_fit_the_reaper_gave_up_on_writes_no_stage_on_its_run_nor_on_another(labelled: Labelled) -> None:
    """The reaper failed the run (its `restarts` unchanged) while this process still fitted it: the
    failed run keeps the reaper's stage, and another running run of the same count keeps its own."""
    dataset, *_ = labelled
    failed = AggregationRun.objects.create(
        dataset=dataset, methods=["dawid_skene"], status=JobStatus.FAILED, stage="", progress=0.3
    )
    other = AggregationRun.objects.create(
        dataset=dataset, methods=["glad"], status=JobStatus.RUNNING, stage="fitting glad", progress=0.5
    )
    assert aggregation_runs._fit_claimed(failed) is None
    assert [
        (run.stage, run.progress) for run in AggregationRun.objects.filter(pk__in=[failed.pk, other.pk]).order_by("pk")
    ] == [
        ("", 0.3),
        ("fitting glad", 0.5),
    ]


def test_the_run_returned_carries_the_figures_it_stored(labelled: Labelled) -> None:
    dataset, *_ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    done = aggregation_runs.run_aggregation(run.pk)
    assert done is not None
    assert done.figures == AggregationRun.objects.get(pk=run.pk).figures
    assert done.figures["stopped_confident"] == 0 and done.figures["dawid_skene"]["pairs"] == 10


def test_the_majority_vote_neither_overrules_nor_resolves_its_own_gold(labelled: Labelled) -> None:
    """Where the 5 labels give no gold the majority vote declines too ("-" = "-"): no difference,
    so nothing resolved, not even the split pair."""
    dataset, *_, split, _, _ = labelled
    run = AggregationRun.objects.create(dataset=dataset, methods=["majority_vote"])
    aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    figures = dict(run.figures["majority_vote"])
    figures.pop("seconds")
    assert figures == {"skill_meaning": "", "pairs": 10, "agree_with_gold": 10, "overrules": 0, "resolves": 0}
    declined = AggregatedLabel.objects.get(run=run, method="majority_vote", pair=split)
    assert (declined.label, declined.gold_label, declined.differs) == (NO_GOLD, NO_GOLD, False)


def test_each_worker_estimate_counts_that_workers_own_labels(make_worker: Callable[..., Worker]) -> None:
    """Workers who labelled different numbers of pairs: each estimate says how many were that
    worker's; the anonymous imported labels count in the run's labels but not as workers."""
    dataset = factories.dataset("uneven")
    often, sometimes, rarely = (make_worker(username=name) for name in ("often", "sometimes", "rarely"))
    for labels, validators in (
        ([E, E, E], [sometimes, rarely]),
        ([N, N, N], [sometimes, rarely]),
        ([C, C], [sometimes]),
        ([E, E], []),
        ([N, C], []),
    ):
        factories.pair(dataset, factories.premise(dataset), labels, author=often, validators=validators)
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene", "mace"])
    aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    assert (run.pair_count, run.label_count, run.worker_count) == (5, 12, 3)
    for method in ("dawid_skene", "mace"):
        counts = dict(WorkerEstimate.objects.filter(run=run, method=method).values_list("worker_id", "labels"))
        assert counts == {often.pk: 5, sometimes.pk: 3, rarely.pk: 2}


def test_the_ranked_workers_come_with_their_users_in_one_query(
    make_worker: Callable[..., Worker], django_assert_num_queries: DjangoAssertNumQueries
) -> None:
    dataset = factories.dataset("ranked-users")
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    for index, skill in enumerate([0.2, 0.8, 0.5]):
        WorkerEstimate.objects.create(
            run=run, method="dawid_skene", worker=make_worker(username=f"shown{index}"), skill=skill, labels=2
        )
    with django_assert_num_queries(1):
        names = [estimate.worker.user.username for estimate in aggregation_runs.ranked_workers(run)]
    assert names == ["shown1", "shown2", "shown0"]


def test_the_ranked_workers_are_the_runs_own_of_its_method_ties_by_worker(make_worker: Callable[..., Worker]) -> None:
    """Another run's estimates and another method's are not this ranking's; equal skills go by
    worker id, whatever order their rows were written in."""
    dataset = factories.dataset("ranked-own")
    run, other = (AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"]) for _ in range(2))
    workers = [make_worker(username=f"tied{index}") for index in range(3)]
    for worker in reversed(workers):
        WorkerEstimate.objects.create(run=run, method="dawid_skene", worker=worker, skill=0.5, labels=2)
    outsider = make_worker(username="outsider")
    WorkerEstimate.objects.create(run=other, method="dawid_skene", worker=outsider, skill=0.9, labels=2)
    WorkerEstimate.objects.create(run=run, method="glad", worker=outsider, skill=0.9, labels=2)
    ranked = aggregation_runs.ranked_workers(run)
    assert [estimate.worker_id for estimate in ranked] == [worker.pk for worker in workers]


def test_equally_confident_disagreements_follow_the_pair_order_whatever_order_they_were_stored(
    labelled: Labelled,
) -> None:
    """Ties in posterior go by pair, however the rows, their pairs and the pairs' premises lie in
    their tables (each rewritten here in an order of its own, none of them the pairs' order), and
    also where PostgreSQL reads the tables rather than the index of disagreements (as it may on a
    large run), so the order comes from the query and not from the index."""
    dataset, *_ = labelled
    pairs = list(Pair.objects.filter(dataset=dataset).order_by("pk"))
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    shuffled = random.Random(7)
    for pair in shuffled.sample(pairs, len(pairs)):
        Pair.objects.filter(pk=pair.pk).update(hypothesis=f"{pair.hypothesis} (rewritten)")
    for pair in shuffled.sample(pairs, len(pairs)):
        Premise.objects.filter(pk=pair.premise_id).update(text=f"{pair.premise.text} (rewritten)")
    for pair in shuffled.sample(pairs, len(pairs)):
        stored(run, "dawid_skene", pair, 0.75, True)
    assert [row.pair_id for row in aggregation_runs.disagreements(run)] == [pair.pk for pair in pairs]
    with connection.cursor() as cursor:  # until the test's transaction ends
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
    assert [row.pair_id for row in aggregation_runs.disagreements(run)] == [pair.pk for pair in pairs]


def test_a_correlated_group_the_run_finds_is_stored_as_the_runs(make_worker: Callable[..., Worker]) -> None:
    """100 SNLI dev pairs labelled by six honest ids and two that share a rule (the replay's
    seeded table): the group the run finds is written with the run, and its figures say so."""
    pairs = read_pairs(shared_file("snli_1.0_dev.jsonl"), limit=100)
    data = label_table(pairs, 0.3, seed=0, honest=6, bots=2)
    dataset, _, workers = load_into_database(pairs, data, make_worker)
    run = AggregationRun.objects.create(dataset=dataset, methods=["dawid_skene"])
    aggregation_runs.run_aggregation(run.pk)
    run.refresh_from_db()
    assert run.status == JobStatus.DONE, run.error
    (group,) = CorrelatedWorkerGroup.objects.filter(run=run)
    assert set(group.members.values_list("pk", flat=True)) == {workers[f"{BOT_PREFIX}{n}"].pk for n in range(2)}
    assert run.figures["correlated"]["groups"] == 1
    assert run.figures["correlated"]["pairs_to_adjudicate"] == GroupDecidedPair.objects.filter(run=run).count()
