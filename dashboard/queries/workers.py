"""The workers page: each worker's output, agreement with gold and median seconds per writing task."""

from collections.abc import Mapping
from typing import Any

from django.db.models import Count, F, Q

from collection.models import WritingClaim
from corpus.agreement import ratio
from corpus.models import AUTHOR_POSITION, NO_GOLD, Dataset, Premise, ValidationLabel, Worker
from corpus.selectors import TeamDatasets, dataset_sql, excluded_workers, in_datasets, pairs_in
from crowd.models import ClaimStatus
from quality.selectors import median_per_worker

from ..figure_cache import cached, refreshable

WORKER_COLUMNS = {
    # sort key: (column heading, is numeric)
    "worker": ("worker", False),
    "market": ("market", False),
    "pairs_written": ("pairs written", True),
    "author_gold": ("author = gold", True),
    "labels_given": ("labels given", True),
    "gold_agreement": ("agreement with gold", True),
    "median_writing_seconds": ("median s / writing task", True),
}


def workers_overview(
    dataset: Dataset | TeamDatasets | None = None, split: str | None = None, *, sort: str = "-pairs_written"
) -> tuple[list[dict[str, Any]], str]:
    rows = cached("workers", dataset, split, lambda: _worker_rows(dataset, split))
    return sort_rows(rows, sort)


def sort_rows(rows: list[dict[str, Any]], sort: str) -> tuple[list[dict[str, Any]], str]:
    descending = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in WORKER_COLUMNS:
        key, descending = "pairs_written", True
    present = [row for row in rows if row[key] is not None]
    missing = [row for row in rows if row[key] is None]
    present.sort(
        key=lambda row: (
            (row[key], row["worker"]) if not isinstance(row[key], str) else (row[key].lower(), row["worker"])
        ),
        reverse=descending,
    )
    # Empty cells go last whichever way the column is sorted.
    return present + missing, ("-" if descending else "") + key


@refreshable("workers")
def _worker_rows(dataset: Dataset | TeamDatasets | None, split: str | None) -> list[dict[str, Any]]:
    pairs = pairs_in(dataset, split).filter(author__isnull=False)
    written: dict[int, Mapping[str, Any]] = {
        row["author_id"]: row
        for row in pairs.values("author_id")
        .annotate(
            n=Count("id"),
            with_gold=Count("id", filter=~Q(gold_label=NO_GOLD)),
            author_is_gold=Count("id", filter=Q(author_label=F("gold_label"))),
        )
        .order_by()
    }
    labels = ValidationLabel.objects.filter(position__gt=AUTHOR_POSITION, worker__isnull=False)
    labels = in_datasets(labels, dataset, via="pair__dataset")
    if split:
        labels = labels.filter(pair__premise__split=split)
    given: dict[int, Mapping[str, Any]] = {
        row["worker_id"]: row
        for row in labels.values("worker_id")
        .annotate(
            n=Count("id"),
            with_gold=Count("id", filter=~Q(pair__gold_label=NO_GOLD)),
            agree=Count("id", filter=Q(label=F("pair__gold_label"))),
        )
        .order_by()
    }
    medians = median_writing_seconds(dataset, split)
    active = set(written) | set(given) | set(medians)
    excluded = excluded_workers(dataset)  # in the scope's teams: another team's decision is its own
    rows: list[dict[str, Any]] = []
    for worker in Worker.objects.filter(pk__in=active).select_related("user"):
        wrote = written.get(worker.pk, {})
        gave = given.get(worker.pk, {})
        rows.append(
            {
                "id": worker.pk,
                "worker": str(worker),
                "username": worker.user.get_username(),
                "market": worker.market,
                "is_trusted": worker.is_trusted,
                "is_excluded": worker.pk in excluded,
                "pairs_written": wrote.get("n", 0),
                "author_gold": ratio(wrote.get("author_is_gold", 0), wrote.get("with_gold", 0)),
                "labels_given": gave.get("n", 0),
                "gold_agreement": ratio(gave.get("agree", 0), gave.get("with_gold", 0)),
                "median_writing_seconds": medians.get(worker.pk),
            }
        )
    return rows


def median_writing_seconds(dataset: Dataset | TeamDatasets | None = None, split: str | None = None) -> dict[int, float]:
    """{worker id: median seconds from claiming a premise to submitting it}, computed in SQL."""
    claims = WritingClaim._meta.db_table
    premises = Premise._meta.db_table
    where = ["c.status = %s", "c.submitted_at IS NOT NULL"]
    params: list[Any] = [ClaimStatus.SUBMITTED.value]
    if (condition := dataset_sql(dataset, "p.dataset_id")) is not None:
        where.append(condition[0])
        params.extend(condition[1])
    if split:
        where.append("p.split = %s")
        params.append(split)
    seconds = "EXTRACT(EPOCH FROM (c.submitted_at - c.created_at))"
    return median_per_worker(
        f"SELECT c.worker_id AS worker_id, {seconds} AS seconds FROM {claims} c "
        f"JOIN {premises} p ON p.id = c.premise_id WHERE {' AND '.join(where)}",
        params,
    )
