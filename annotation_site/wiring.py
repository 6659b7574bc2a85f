"""The composition root's wiring of a worker's way through a study (docs/architecture.md).

The crowd layer runs studies of every kind of task but sits beneath the apps that serve the tasks
(collection, validation, adversarial) and the app that judges who may take them (quality). What it
must know of them is wired here, beside settings.py and urls.py: the composition root, the one
place that names every app by design (tests/test_layering.py leaves these three modules out and
sees every arrow into them). Crowd's pages and the qualification page import what they need from
here; the apps above call crowd and quality plainly.

- `NEXT_TASK_URL`: the URL name of the next task of a study of each kind (crowd.TaskKind);
- `admission_refusal(study, worker)`: crowd's own rules (open, closed list) and, for studies with
  access "qualified", the quality app's qualification test;
- `worker_marks(worker_ids)` and `completion_rows(studies)`: the approval and bonus lists' marks,
  crowd's own ("excluded") and the quality app's flags;
- `CLAIM_MODELS`: every concrete `crowd.TaskClaim` of the task apps, whose open claims the crowd
  layer releases when a worker starts another study session (`start_study_session`) or is
  excluded (`release_open_claims_of_workers`, called by the quality app) or their submission is
  returned on the market (`release_open_claims_of_session`, called by the markets app). Named here rather than
  found by scanning the app registry, so the arrow to each task app is one the layering test sees;
  tests/crowd/test_claim_wiring.py checks that no concrete claim model is missing.
- `SNAPSHOT_EXTRA_FILES`: the files a snapshot holds beside the pairs' that other apps of the
  modeling app's layer keep (modeling.snapshots.services.ExtraFiles): MPE's per-premise labels
  (validation), `premise_labels.tsv`, in a snapshot of multi-premise datasets that have them.
- `load_before_first_request()`: what the task apps load on first use and a web server loads at
  start instead (annotation_site/wsgi.py); in the embedded mode, also the long-task reaper's thread.
- `long_task_kinds()` and `reap_long_tasks()`: every long task with a status row (exports,
  aggregation runs, tagging jobs, monitor refreshes, imports) and the one reaper that restarts or
  fails those whose process died (annotation_site/long_tasks.py).
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

from annotation_site.celery import app, load_for_enqueue
from annotation_site.long_tasks import LongTaskKind, reap_stale_long_tasks, start_embedded_reaper
from collection.models import WritingClaim
from collection.writing_rules import load_word_list
from crowd import access, arrival, selectors
from crowd.models import TaskClaim, TaskKind
from quality.qualification import admission_check
from quality.selectors import flag_marks
from validation.models import GrammaticalityClaim, PremiseLabelClaim, ValidationClaim
from validation.premise_label_selectors import premise_label_rows_of
from validation.premise_table import write_rows

if TYPE_CHECKING:
    from corpus.models import Worker
    from crowd.models import Study, StudySession

NEXT_TASK_URL: dict[str, str] = {
    TaskKind.WRITING: "writing_next",
    TaskKind.VALIDATION: "validation:next",
    TaskKind.MPE_JUDGMENT: "validation:mpe-next",
    TaskKind.ADVERSARIAL: "adversarial:next",
    TaskKind.PREMISE_LABELS: "validation:premise-next",
}
# DNC's grammaticality task, offered on the home page beside a validation study's batches.
GRAMMATICALITY_URL = "validation:grammaticality"


def admission_refusal(study: "Study", worker: "Worker | None") -> access.Refusal | None:
    """None when `worker` may work on `study` now, else the crowd.access.Refusal to show (or follow)."""
    return access.admission_refusal(study, worker, qualification_check=admission_check)


def worker_marks(worker_ids: Iterable[int]) -> dict[int, list[str]]:
    """{worker pk: [words]}: "excluded", and the quality app's flags, for a list a researcher pays from."""
    return selectors.worker_marks(worker_ids, flagged=flag_marks)


def completion_rows(studies: Iterable["Study"]) -> Iterator[list[Any]]:
    """The completed sessions' CSV rows, their workers marked (`worker_marks`)."""
    return selectors.completion_rows(studies, flagged=flag_marks)


CLAIM_MODELS: tuple[type[TaskClaim], ...] = (WritingClaim, ValidationClaim, PremiseLabelClaim, GrammaticalityClaim)


def start_study_session(study: "Study", visit: arrival.Arrival, *, device: str = "") -> arrival.StartedSession:
    """Create or resume the worker's StudySession, releasing their open claims of other sessions."""
    return arrival.start_study_session(study, visit, claim_models=CLAIM_MODELS, device=device)


def release_open_claims_of_workers(worker_ids: Iterable[int]) -> int:
    """Release every open claim of these workers, of every task app; returns how many."""
    return arrival.release_open_claims_of_workers(worker_ids, claim_models=CLAIM_MODELS)


def release_open_claims_of_session(session: "StudySession") -> int:
    """Release the open claims made in one study session, of every task app; returns how many."""
    return arrival.release_open_claims_of_session(session, claim_models=CLAIM_MODELS)


PREMISE_LABELS_FILE = "premise_labels.tsv"


def premise_label_snapshot_file(datasets: Sequence[str], filters: Mapping[str, Any], directory: Path) -> dict[str, int]:
    """`premise_labels.tsv`, written as `export_mpe_premise_labels` writes it, of the snapshot's
    multi-premise datasets in its splits; nothing where they have no per-premise judgment."""
    rows = premise_label_rows_of(datasets, filters.get("splits") or ())
    if rows is None:
        return {}
    with open(directory / PREMISE_LABELS_FILE, "w", encoding="utf-8", newline="") as stream:
        return {PREMISE_LABELS_FILE: write_rows(rows, stream)}


SNAPSHOT_EXTRA_FILES = (premise_label_snapshot_file,)


def load_before_first_request() -> None:
    """Load what would make a server process's first request of a kind slow: the writing checks'
    English word list (wordfreq, ~0.35 s) and the task modules and broker client a submit's
    first `enqueue` imports (~0.4 s). With them loaded on first use a writing submit's p99 at
    human pace was 430 ms, each process's first (bench/human_pace.py). Tests and commands keep
    loading them on first use."""
    load_word_list()
    load_for_enqueue()
    if settings.CELERY_TASK_ALWAYS_EAGER and settings.EMBEDDED_TASKS == "background":
        # The embedded mode has no Celery beat: this process reaps what a crashed one left running.
        start_embedded_reaper(reap_long_tasks, settings.LONG_TASK_REAPER_SECONDS)


def long_task_kinds() -> tuple[LongTaskKind, ...]:
    """Every long task with a status row, and what the reaper does when its process dies
    (annotation_site/long_tasks.py). Imported here, when first asked: the snapshot services import
    this module; the task names are spelled out here because those services import this module
    (tests/test_long_tasks.py checks them against the services' own constants). Training runs
    have their own heartbeats and reaper (modeling.training)."""
    from artifacts.models import JobStatus as ArtifactsJobStatus
    from artifacts.models import MonitorRefresh, TaggingJob
    from collection.models import PremiseImport
    from importers.models import CorpusImport
    from modeling.models import JobStatus, Snapshot
    from quality.models import AggregationRun, AggregationStatus

    again_import = "Run the import again: what is already in the dataset is skipped."
    return (
        # An export restarts from scratch into a fresh temporary folder renamed into place at the end.
        LongTaskKind(
            Snapshot,
            lost="the export",
            again="Request a new snapshot.",
            task="modeling.tasks.export_snapshot_task",
            requeue_status=JobStatus.PENDING,
        ),
        LongTaskKind(
            AggregationRun,
            lost="the aggregation run",
            again="Start a new run.",
            task="quality.aggregate_labels",
            requeue_status=AggregationStatus.PENDING,
        ),
        # A tagging job tags the pairs still untagged, so a restart goes on where the dead one stopped.
        LongTaskKind(
            TaggingJob,
            lost="the tagging job",
            again="Start tagging again.",
            task="artifacts.tag_pairs",
            requeue_status=ArtifactsJobStatus.QUEUED,
            started_field="created_at",
        ),
        # A refresh is made anew by its next trigger (hourly, or new pairs): failed, not restarted.
        LongTaskKind(
            MonitorRefresh,
            lost="the monitor refresh",
            again="The next refresh runs on schedule.",
            started_field="created_at",
        ),
        # Imports run in a command's process, with the file on its machine: failed, not restarted.
        LongTaskKind(CorpusImport, lost="the import", again=again_import),
        LongTaskKind(PremiseImport, lost="the import", again=again_import),
    )


@app.task(name="annotation_site.reap_long_tasks", ignore_result=True)
def reap_long_tasks() -> list[str]:
    """On the beat (settings.CELERY_BEAT_SCHEDULE; settings.CELERY_IMPORTS registers it in every
    Celery worker): long tasks whose process died are started again or failed."""
    return reap_stale_long_tasks(long_task_kinds())
