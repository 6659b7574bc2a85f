"""The imports page: recent premise and corpus imports with their progress and reports, and what a
queued one waits for."""

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db.models import Model

from artifacts.models import TaggingJob
from collection.models import PremiseImport
from corpus.models import ImportStatus
from importers.models import CorpusImport
from modeling.models import Snapshot
from quality.models import AggregationRun

IMPORTS_SHOWN = 30
# Running jobs named beside a queued import (the rest counted).
RUNNING_NAMED = 3

Run = TypeVar("Run", PremiseImport, CorpusImport)


def recent_premise_imports(limit: int = IMPORTS_SHOWN) -> list[PremiseImport]:
    runs = list(PremiseImport.objects.select_related("dataset", "genre").order_by("-started_at", "-pk")[:limit])
    return with_waiting(runs)


def recent_corpus_imports(limit: int = IMPORTS_SHOWN) -> list[CorpusImport]:
    runs = list(CorpusImport.objects.select_related("dataset").order_by("-started_at", "-pk")[:limit])
    return with_waiting(runs)


def imports_by_id(kind: str, ids: list[int]) -> list[PremiseImport] | list[CorpusImport]:
    if kind == "premises":
        return with_waiting(list(PremiseImport.objects.filter(pk__in=ids).select_related("dataset", "genre")))
    return with_waiting(list(CorpusImport.objects.filter(pk__in=ids).select_related("dataset")))


def running_jobs() -> list[str]:
    """The long tasks the Celery workers are running now, oldest first, as a researcher names them."""
    jobs = [
        *((run.started_at, f"premise import #{run.pk} ({run.source})") for run in _running(PremiseImport)),
        *((run.started_at, f"corpus import #{run.pk} ({run.source})") for run in _running(CorpusImport)),
        *((row.started_at, f"snapshot #{row.pk} (export)") for row in _running(Snapshot)),
        *((row.started_at, f"aggregation run #{row.pk}") for row in _running(AggregationRun)),
        *((row.created_at, f"tagging job #{row.pk}") for row in _running(TaggingJob)),
    ]
    return [name for _, name in sorted(jobs, key=lambda job: (job[0] is None, job[0] or 0))]


def waiting_text(running: Sequence[str]) -> str:
    """What a queued import waits for: the jobs running before it, or a worker to take it."""
    if not running:
        return "waiting for a Celery worker to take it"
    named = ", ".join(running[:RUNNING_NAMED])
    more = f" and {len(running) - RUNNING_NAMED} more" if len(running) > RUNNING_NAMED else ""
    return f"waiting for a Celery worker; running now: {named}{more}"


def with_waiting(runs: list[Run]) -> list[Run]:
    """`runs`, each queued one with `waiting` (what it waits for); read once for the whole list."""
    queued = [run for run in runs if run.status == ImportStatus.QUEUED]
    if queued:
        text = waiting_text(running_jobs())
        for run in queued:
            run.waiting = text  # type: ignore[attr-defined]
    return runs


def _running(model: type[Model]) -> list[Any]:
    return list(model._default_manager.filter(status="running").order_by("pk")[: RUNNING_NAMED + 1])
