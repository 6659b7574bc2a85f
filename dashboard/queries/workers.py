"""The workers page: each worker's output, agreement with gold and median seconds per writing task."""

from typing import Any

from collection.models import WritingClaim
from corpus.agreement import ratio
from corpus.models import Dataset, Premise, Worker
from corpus.selectors import TeamDatasets, dataset_sql, excluded_workers
from corpus.worker_tally import worker_sums, writer_sums
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
    """Each worker's row: pairs written and labels given with their agreement with gold, summed
    from the maintained worker tallies (`corpus.worker_tally`: one statement each, whatever the
    numbers of workers, pairs and labels), and the median writing seconds."""
    written = writer_sums(dataset, split)
    given = worker_sums(dataset, split, medians=False, only=("n", "with_gold", "gold_agreements"))
    medians = median_writing_seconds(dataset, split)
    active = set(written) | set(given) | set(medians)
    excluded = excluded_workers(dataset)  # in the scope's teams: another team's decision is its own
    rows: list[dict[str, Any]] = []
    # Plain rows, not Worker objects: a thousand of them with their users cost more than the figures.
    people = Worker.objects.filter(pk__in=active).values_list(
        "pk", "external_id", "user__username", "market", "is_trusted"
    )
    for pk, external_id, username, market, is_trusted in people:
        wrote = written.get(pk, {})
        gave = given.get(pk, {})
        rows.append(
            {
                "id": pk,
                "worker": Worker.named(external_id, username),
                "username": username,
                "market": market,
                "is_trusted": is_trusted,
                "is_excluded": pk in excluded,
                "pairs_written": wrote.get("n", 0),
                "author_gold": ratio(wrote.get("author_is_gold", 0), wrote.get("with_gold", 0)),
                "labels_given": gave.get("n", 0),
                "gold_agreement": ratio(gave.get("gold_agreements", 0), gave.get("with_gold", 0)),
                "median_writing_seconds": medians.get(pk),
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
