"""Aggregation runs: fit label models on a dataset's counted labels and store what they say.

Queued by task name (`quality.aggregate_labels`); the run row carries status, stage and progress
for the dashboard. The majority-vote gold stays the corpus label: a run writes only its own tables,
all of its results in one transaction with its "done", so a run is never seen half-written. Labels
count as for gold labels; an imported label without a worker is its own one-label worker (a
position in the TSV is not a person), never in the worker ranking.
"""

import io
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from audit import services as audit
from base.long_tasks import JobStatus, heartbeat, take
from base.task_queue import enqueue
from corpus.labels import NO_GOLD
from corpus.models import Dataset, Pair, ValidationLabel
from corpus.selectors import labels_that_count

from .correlated_runs import check_labels, save_check
from .models import AggregatedLabel, AggregationRun, WorkerEstimate

if TYPE_CHECKING:
    import pandas as pd

    from .aggregation import AggregationResult

logger = logging.getLogger(__name__)

TASK_NAME = "quality.aggregate_labels"
# GLAD is offered but not by default: minutes where Dawid–Skene takes seconds (docs/quality.md).
METHODS = ("dawid_skene", "mace", "glad")
DEFAULT_METHODS = ("dawid_skene", "mace")
MIN_LABELS_PER_PAIR = 2
# pandas and the label models (crowd-kit, which imports nltk) are imported where a run reads or
# fits, not here: the URLconf and every Celery worker import this module, and those imports cost a
# fresh process about a second.
WRITE_BATCH = 5000
_ANONYMOUS = "anon-"


class NothingToAggregate(Exception):
    """The dataset has no pairs the models could score."""


class TakenOver(Exception):
    """The reaper started the run again while this process, thought dead, was still fitting it."""


def normalize_methods(methods: Iterable[str] | None) -> list[str]:
    methods = list(dict.fromkeys(methods or DEFAULT_METHODS))
    unknown = [method for method in methods if method not in METHODS]
    if unknown:
        raise ValidationError({"methods": f"unknown method(s): {', '.join(unknown)}; choose from {', '.join(METHODS)}"})
    if "dawid_skene" not in methods:
        methods.insert(0, "dawid_skene")  # the reference model; every run has it
    return methods


def request_aggregation(
    user: User | AnonymousUser | None, dataset: Dataset, methods: Iterable[str] | None = None
) -> AggregationRun:
    """A pending run of these methods on the dataset, queued once the row is committed. A run a
    researcher starts is in the dataset's team's audit log; the beat's (no user) is not a decision."""
    methods = normalize_methods(methods)
    starter = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        run = AggregationRun.objects.create(dataset=dataset, methods=methods, created_by=starter)
        if starter is not None:
            audit.record(
                "aggregation.started",
                actor=starter,
                subject=run,
                subject_label=f"aggregation run {run.pk} of {dataset.slug}",
                team_id=dataset.team_id,
                after={"methods": methods},
                datasets=[dataset.slug],
            )
        transaction.on_commit(lambda: enqueue(TASK_NAME, run.pk))
    return run


def datasets_due_for_aggregation() -> QuerySet[Dataset]:
    """Datasets the beat aggregates now: a study of theirs holds codes
    (`hold_code_at_chance`), no run of theirs is pending or running, and a label was written after
    their latest finished run started (that run read the labels there were then), or they have
    labels and no finished run. One query: a dataset whose labels did not change is left out. A
    failed run counts as finished, so a dataset with nothing to aggregate yet (author labels only)
    is not tried again on every beat, only once labels arrive."""
    read_from = Subquery(
        AggregationRun.objects.filter(dataset=OuterRef("pk"), finished_at__isnull=False)
        .annotate(read_from=Coalesce("started_at", "created_at"))
        .order_by("-read_from", "-pk")
        .values("read_from")[:1]
    )
    labels = ValidationLabel.objects.filter(pair__dataset=OuterRef("pk"))
    return (
        Dataset.objects.filter(pk__in=Dataset.objects.filter(studies__hold_code_at_chance=True).values("pk"))
        .exclude(
            Exists(
                AggregationRun.objects.filter(dataset=OuterRef("pk"), status__in=[JobStatus.PENDING, JobStatus.RUNNING])
            )
        )
        .annotate(read_from=read_from)
        .filter(
            (Q(read_from__isnull=True) & Exists(labels)) | Exists(labels.filter(created_at__gt=OuterRef("read_from")))
        )
        .order_by("pk")
    )


def aggregate_changed_datasets() -> list[AggregationRun]:
    """Start an aggregation run (the button's default methods, the same queued task) on every
    dataset `datasets_due_for_aggregation` names; the runs, one a dataset."""
    return [request_aggregation(None, dataset) for dataset in datasets_due_for_aggregation()]


def counted_labels(dataset: Dataset) -> "pd.DataFrame":
    """The dataset's counted labels in crowd-kit's layout (task = pair pk, worker, label)."""
    import pandas as pd

    rows = (
        ValidationLabel.objects.filter(labels_that_count(), pair__dataset=dataset)
        .values_list("pair_id", "worker_id", "label", "pk")
        .order_by()
    )
    data = pd.DataFrame.from_records(list(rows.iterator(chunk_size=20000)), columns=["task", "worker", "label", "pk"])
    if data.empty:
        return data.loc[:, ["task", "worker", "label"]]
    anonymous = data["worker"].isna()
    workers = data["worker"].astype("Int64").astype(str)
    workers[anonymous] = _ANONYMOUS + data.loc[anonymous, "pk"].astype(str)
    data["worker"] = workers
    sizes = data.groupby("task")["label"].transform("size")
    return data.loc[sizes >= MIN_LABELS_PER_PAIR, ["task", "worker", "label"]].reset_index(drop=True)


def _stage(run: AggregationRun, stage: str, progress: float) -> None:
    # Only while the run is still this process's (as `_fit_claimed`'s `held`): after a restart by
    # the reaper the page shows the restart's stage, not this stale fit's.
    AggregationRun.objects.filter(pk=run.pk, status=JobStatus.RUNNING, restarts=run.restarts).update(
        stage=stage, progress=min(progress, 0.99)
    )


def run_aggregation(run_id: int) -> AggregationRun | None:
    """Fit the run's methods and store their results; on any failure the run is marked failed with
    the reason and keeps no results. Returns the run (None when it was done or running already, or
    when the reaper started it again meanwhile)."""
    # base.long_tasks.take: two deliveries of one task never both run; a dead worker's run is taken over.
    if not take(AggregationRun, run_id, stage="reading labels"):
        return None
    run = AggregationRun.objects.get(pk=run_id)
    with heartbeat(AggregationRun, run.pk):
        return _fit_claimed(run)


def _fit_claimed(run: AggregationRun) -> AggregationRun | None:
    from . import aggregation

    # Still this process's run: a restart by the reaper (base/long_tasks.py) counts up
    # `restarts`, and then this process's results and outcome are never written over the restart's.
    held = Q(pk=run.pk, status=JobStatus.RUNNING, restarts=run.restarts)
    try:
        reading = time.perf_counter()
        data = counted_labels(run.dataset)
        if data.empty:
            raise NothingToAggregate(
                f"dataset {run.dataset.slug} has no pairs with {MIN_LABELS_PER_PAIR} or more counted labels"
            )
        # The corpus gold as the run reads it (majority vote; it stays the corpus label).
        gold = dict(Pair.objects.filter(dataset=run.dataset).values_list("pk", "gold_label").iterator(chunk_size=20000))
        timing = {"read_seconds": round(time.perf_counter() - reading, 2)}
        results: dict[str, AggregationResult] = {}
        figures: dict[str, Any] = {}
        for index, method in enumerate(run.methods):
            _stage(run, f"fitting {method}", 0.1 + 0.7 * index / len(run.methods))
            started = time.perf_counter()
            result = aggregation.AGGREGATORS[method](data)
            results[method] = result
            figures[method] = {
                "seconds": round(time.perf_counter() - started, 2),
                "skill_meaning": result.skill_meaning,
            }
        # Correlated errors: the same labels, read once; written with the run's results.
        _stage(run, "checking correlated errors", 0.8)
        correlated = check_labels(data)
        _stage(run, "saving results", 0.85)
        label_counts = data.groupby("worker").size()
        saving = time.perf_counter()
        with transaction.atomic():
            for method, result in results.items():
                figures[method].update(_save_pairs(run, method, result, gold))
                _save_workers(run, method, result, label_counts)
            figures["correlated"] = save_check(run, correlated)
            timing["write_seconds"] = round(time.perf_counter() - saving, 2)
            figures["timing"] = timing
            marked = AggregationRun.objects.filter(held).update(
                status=JobStatus.DONE,
                progress=1.0,
                stage="",
                finished_at=timezone.now(),
                pair_count=int(data["task"].nunique()),
                label_count=len(data),
                worker_count=int(sum(1 for worker in label_counts.index if not worker.startswith(_ANONYMOUS))),
                figures=figures,
            )
            if not marked:
                raise TakenOver(f"aggregation run {run.pk} was started again by the reaper")
    except TakenOver as taken:
        logger.warning("%s; this process's results were dropped", taken)
        return None
    except BaseException as exc:
        # NothingToAggregate is an answer for the researcher, not a crash: the run says why it has no results.
        answer = isinstance(exc, NothingToAggregate)
        AggregationRun.objects.filter(held).update(
            status=JobStatus.FAILED,
            stage="",
            finished_at=timezone.now(),
            error=str(exc) if answer else f"{type(exc).__name__}: {exc}"[:5000],
        )
        if not answer:
            raise
    run.refresh_from_db()
    if run.status == JobStatus.DONE:
        from .stopping import stop_confident_pairs

        # The confident stopping rule reads the posteriors this run just stored.
        figures = dict(run.figures or {})
        figures["stopped_confident"] = stop_confident_pairs(run)
        AggregationRun.objects.filter(pk=run.pk).update(figures=figures)
        run.figures = figures
    return run


def _save_pairs(run: AggregationRun, method: str, result: "AggregationResult", gold: dict[int, str]) -> dict[str, int]:
    """One AggregatedLabel row per scored pair (COPY on PostgreSQL, bulk INSERTs elsewhere)."""
    import pandas as pd

    frame = pd.DataFrame({"label": result.labels.astype(str)})
    frame["posterior"] = result.posterior if result.posterior is not None else 1.0
    frame["pair_id"] = frame.index.astype("int64")
    frame["gold_label"] = frame["pair_id"].map(gold).fillna(NO_GOLD)
    frame["differs"] = frame["label"] != frame["gold_label"]
    posterior = frame["posterior"].astype(float)
    columns = (frame["pair_id"], frame["label"], posterior, frame["gold_label"], frame["differs"])
    rows = list(zip(*(column.tolist() for column in columns), strict=False))
    _write_rows(run, method, rows)
    differs = frame["differs"]
    resolves = int((differs & (frame["gold_label"] == NO_GOLD)).sum())
    return {
        "pairs": len(frame),
        "agree_with_gold": int((~differs).sum()),
        "overrules": int(differs.sum()) - resolves,
        "resolves": resolves,
    }


def _write_rows(run: AggregationRun, method: str, rows: Iterable[tuple[int, str, float, str, bool]]) -> None:
    # COPY: several times the rows/s of INSERTs, in the caller's transaction like them.
    buffer = io.StringIO()
    for pair_id, label, posterior, gold_label, differs in rows:
        buffer.write(
            f"{run.pk}\t{method}\t{pair_id}\t{label}\t{posterior!r}\t{gold_label}\t{'t' if differs else 'f'}\n"
        )
    buffer.seek(0)
    with connection.cursor() as cursor:
        cursor.copy_expert(
            f"COPY {AggregatedLabel._meta.db_table} (run_id, method, pair_id, label, posterior, gold_label, differs) "
            "FROM STDIN",
            buffer,
        )


def _confusion(result: "AggregationResult", worker: str) -> dict[str, dict[str, float]] | None:
    if result.worker_confusion is None:
        return None
    table = result.worker_confusion.loc[worker]  # given x true
    return {true: {given: round(float(table.loc[given, true]), 4) for given in table.index} for true in table.columns}


def _save_workers(run: AggregationRun, method: str, result: "AggregationResult", label_counts: "pd.Series") -> None:
    if result.worker_skill is None:
        return
    WorkerEstimate.objects.bulk_create(
        (
            WorkerEstimate(
                run=run,
                method=method,
                worker_id=int(worker),
                skill=float(skill),
                labels=int(label_counts.get(worker, 0)),
                confusion=_confusion(result, worker),
            )
            for worker, skill in result.worker_skill.items()
            if not str(worker).startswith(_ANONYMOUS)
        ),
        batch_size=WRITE_BATCH,
    )


# --- reads for the dashboard ---------------------------------------------------------------------


def disagreements(run: AggregationRun, method: str = "dawid_skene") -> QuerySet[AggregatedLabel]:
    """A run's pairs where `method` differs from the gold label, most confident first (page it)."""
    return (
        AggregatedLabel.objects.filter(run=run, method=method, differs=True)
        .select_related("pair__premise")
        .order_by("-posterior", "pair_id")
    )


def ranked_workers(run: AggregationRun, method: str = "dawid_skene", limit: int = 200) -> list[WorkerEstimate]:
    """The run's workers by estimated skill, best first (ties by worker id)."""
    return list(
        WorkerEstimate.objects.filter(run=run, method=method)
        .select_related("worker__user")
        .order_by("-skill", "worker_id")[:limit]
    )
