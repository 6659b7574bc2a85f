"""The imports page: recent imports with their progress and reports, and what a queued one waits for."""

from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from django.db.models import CharField, Count, F, IntegerField, Model, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from artifacts.models import TaggingJob
from collection.models import PremiseImport
from corpus import tallies
from corpus.models import Dataset, ImportStatus, PairTally, Premise, PremiseStatus, Split
from corpus.scope import EVERYTHING, Scope
from importers.models import CorpusImport
from modeling.models import Snapshot
from quality.models import AggregationRun
from teams import access

IMPORTS_SHOWN = 30
# Running jobs named beside a queued import (the rest counted).
RUNNING_NAMED = 3

Run = TypeVar("Run", PremiseImport, CorpusImport)


def datasets_with_unassigned(scope: Scope = EVERYTHING) -> list[Dataset]:
    """The datasets of `scope`, by slug, each with `unassigned`: its available premises without a
    split (a writing study serves none). Read from the index `premise_claimable`, so sized by the
    premises waiting, not by the dataset's premises."""
    waiting = (
        Premise.objects.filter(dataset=OuterRef("pk"), status=PremiseStatus.AVAILABLE, split="")
        .order_by()
        .values("dataset")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = scope.datasets()
    return list(rows.annotate(unassigned=Coalesce(Subquery(waiting), 0)).order_by("slug"))


def validation_marking(datasets: Sequence[Dataset], research_teams: Collection[int] | None) -> list[dict[str, Any]]:
    """Per dataset of `datasets` whose team is one of `research_teams` (None: every team): its
    train and dev/test pairs, those marked for validation, and the share kept on the dataset.
    Summed from the maintained pair tally, whatever the dataset's number of pairs."""
    datasets = access.in_teams(datasets, research_teams)
    empty = {"train": 0, "train_marked": 0, "dev_test": 0, "dev_test_marked": 0}
    counts: dict[int, dict[str, int]] = {dataset.pk: dict(empty) for dataset in datasets}
    rows = tallies.summed(
        PairTally.objects.filter(dataset_id__in=list(counts), split__in=[Split.TRAIN, Split.DEV, Split.TEST]),
        ("dataset_id", "split", "needs_validation"),
    )
    for dataset_id, split, marked, n in rows:
        kind = "train" if split == Split.TRAIN else "dev_test"
        counts[dataset_id][kind] += n
        if marked:
            counts[dataset_id][f"{kind}_marked"] += n
    return [
        {"slug": dataset.slug, "share_pct": round(100 * dataset.train_validation_fraction), **counts[dataset.pk]}
        for dataset in datasets
    ]


def recent_premise_imports(limit: int = IMPORTS_SHOWN, scope: Scope = EVERYTHING) -> list[PremiseImport]:
    imports = scope.filter(PremiseImport.objects.all())
    runs = list(imports.select_related("dataset", "genre").order_by("-started_at", "-pk")[:limit])
    return with_waiting(runs, scope)


def recent_corpus_imports(limit: int = IMPORTS_SHOWN, scope: Scope = EVERYTHING) -> list[CorpusImport]:
    imports = scope.filter(CorpusImport.objects.all())
    runs = list(imports.select_related("dataset").order_by("-started_at", "-pk")[:limit])
    return with_waiting(runs, scope)


def imports_by_id(kind: str, ids: list[int], scope: Scope = EVERYTHING) -> list[PremiseImport] | list[CorpusImport]:
    """The imports named by id that went into the datasets of `scope`: another team's is unknown."""
    if kind == "premises":
        premises = scope.filter(PremiseImport.objects.filter(pk__in=ids))
        return with_waiting(list(premises.select_related("dataset", "genre")), scope)
    corpus = scope.filter(CorpusImport.objects.filter(pk__in=ids))
    return with_waiting(list(corpus.select_related("dataset")), scope)


def running_jobs(scope: Scope = EVERYTHING) -> list[str]:
    """The long tasks the Celery workers are running now, oldest first, as a researcher names them
    (another team's import by its number alone). One UNION ALL of each kind's first running rows."""
    parts = [
        _running("premise import", PremiseImport, "started_at", imported=True),
        _running("corpus import", CorpusImport, "started_at", imported=True),
        _running("snapshot", Snapshot, "started_at"),
        _running("aggregation run", AggregationRun, "started_at"),
        _running("tagging job", TaggingJob, "created_at"),
    ]
    rows = parts[0].union(*parts[1:], all=True)
    jobs = [
        (at, _job_name(kind, pk, source, dataset_id, team_id, scope))
        for kind, pk, at, source, dataset_id, team_id in rows
    ]
    return [name for _, name in sorted(jobs, key=lambda job: (job[0] is None, job[0] or 0))]


def _running(kind: str, model: type[Model], at: str, *, imported: bool = False) -> QuerySet[Any]:
    """The first RUNNING_NAMED + 1 running rows of `model` in the columns `running_jobs` shares."""
    no_id = Value(None, output_field=IntegerField())
    rows = model._default_manager.filter(status="running").order_by("pk")
    return rows.values_list(
        Value(kind, output_field=CharField()),
        "pk",
        at,
        F("source") if imported else Value("", output_field=CharField()),
        F("dataset_id") if imported else no_id,
        F("dataset__team_id") if imported else no_id,
    )[: RUNNING_NAMED + 1]


def _job_name(kind: str, pk: int, source: str, dataset_id: int | None, team_id: int | None, scope: Scope) -> str:
    if dataset_id is None:  # a job of no import: named by its kind and number
        return f"snapshot #{pk} (export)" if kind == "snapshot" else f"{kind} #{pk}"
    if scope.teams is not None:
        shown = team_id in scope.teams
    else:
        shown = scope.dataset is None or dataset_id == scope.dataset.pk
    return f"{kind} #{pk} ({source})" if shown else f"{kind} #{pk}"


def waiting_text(running: Sequence[str]) -> str:
    """What a queued job waits for: the jobs running before it, or a worker to take it (in the
    embedded mode: this process's one background queue)."""
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER:
        if not running:
            return "it starts in a moment in this web process (embedded mode)"
        return f"it waits behind the running job{'s' if len(running) > 1 else ''} ({', '.join(running[:RUNNING_NAMED])}) in this web process's one queue (embedded mode)"
    if not running:
        return "waiting for a Celery worker to take it"
    named = ", ".join(running[:RUNNING_NAMED])
    more = f" and {len(running) - RUNNING_NAMED} more" if len(running) > RUNNING_NAMED else ""
    return f"waiting for a Celery worker; running now: {named}{more}"


def with_waiting(runs: list[Run], scope: Scope = EVERYTHING) -> list[Run]:
    """`runs`, each queued one with `waiting`, read once for the whole list."""
    queued = [run for run in runs if run.status == ImportStatus.QUEUED]
    if queued:
        text = waiting_text(running_jobs(scope))
        for run in queued:
            run.waiting = text  # type: ignore[attr-defined]
    return runs
