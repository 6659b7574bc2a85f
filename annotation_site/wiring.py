"""The composition root's wiring: the task apps registered into the layers beneath them (docs/architecture.md).

The root (annotation_site's settings.py, urls.py, this module, apps.py and wsgi.py) is the top
layer: it names every app by design, and no app imports it (tests/test_layering.py). The apps
beneath declare what they need of apps they must not name, and `register()`, called by
`annotation_site.apps.SiteConfig.ready` in every process, registers the task apps into them (every
concrete `crowd.TaskClaim` is in `CLAIM_MODELS`: tests/crowd/test_claim_wiring.py).

Besides: `load_before_first_request()`, and `long_task_kinds()` with the Celery task
`reap_long_tasks()`: the one reaper that restarts or fails the long tasks whose process died.
"""

from django.conf import settings

from annotation_site.celery import app
from base.embedded_beat import start_embedded_beat
from base.long_tasks import JobStatus, LongTaskKind, reap_stale_long_tasks
from base.task_queue import load_for_enqueue
from base.uploads import discard_upload
from collection.models import PremiseImport, WritingClaim
from collection.premise_uploads import PREMISE_UPLOAD_TASK
from collection.writing_rules import load_word_list
from consent import registry as consent_registry
from consent.selectors import consent_refusal
from corpus.models import ImportStatus
from crowd import registry as crowd_registry
from crowd.models import StudySession, TaskClaim, TaskKind
from dashboard import worker_table
from importers.models import CorpusImport
from importers.services import PAIRS_UPLOAD_TASK
from markets.identity import confirms_each_participant
from model_annotators.triage import claim_preference as triage_claim_preference
from modeling.snapshots import extra_files as snapshot_extra_files
from privacy import register as privacy_register
from privacy.services import remove_contributions
from quality.flag_rows import approval_marks
from quality.qualification import admission_check
from validation import claim_order as validation_claim_order
from validation.models import GrammaticalityClaim, PremiseLabelClaim, ValidationClaim
from validation.selectors import study_catch_shortfall
from validation.snapshot_files import premise_label_snapshot_file

NEXT_TASK_URL: dict[str, str] = {
    TaskKind.WRITING: "writing_next",
    TaskKind.VALIDATION: "validation:next",
    TaskKind.MPE_JUDGMENT: "validation:mpe-next",
    TaskKind.ADVERSARIAL: "adversarial:next",
    TaskKind.PREMISE_LABELS: "validation:premise-next",
}
# DNC's grammaticality task, offered on the home page beside a validation study's batches.
GRAMMATICALITY_URL = "validation:grammaticality"
CLAIM_MODELS: tuple[type[TaskClaim], ...] = (WritingClaim, ValidationClaim, PremiseLabelClaim, GrammaticalityClaim)

# The researchers' pages, whose forms a previewing browser is refused (crowd.preview: they may act
# outside the database, which the preview's rollback would not take back).
RESEARCHER_NAMESPACES = frozenset({"admin", "dashboard"})
SNAPSHOT_EXTRA_FILES = (premise_label_snapshot_file,)


def register() -> None:
    """Register the task apps into the crowd layer and the snapshot export (SiteConfig.ready)."""
    crowd_registry.register(
        crowd_registry.TaskApps(
            next_task_url=NEXT_TASK_URL,
            grammaticality_url=GRAMMATICALITY_URL,
            claim_models=CLAIM_MODELS,
            qualification_check=admission_check,
            consent_check=consent_refusal,
            worker_flags=approval_marks,
            researcher_namespaces=RESEARCHER_NAMESPACES,
            catch_shortfall=study_catch_shortfall,
            market_confirms=confirms_each_participant,
        )
    )
    snapshot_extra_files.register(SNAPSHOT_EXTRA_FILES)
    validation_claim_order.register(triage_claim_preference)
    consent_registry.register_contribution_remover(remove_withdrawn_visit)
    privacy_register.register_above(worker_table.PERSONAL_ROWS)


def remove_withdrawn_visit(study_session: StudySession) -> str:
    """A withdrawal from a study that deletes contributions: the participant's labels and writings on
    the study's dataset leave the corpus, and every figure that counted them is recomputed, in the
    withdrawal's transaction (privacy.services.remove_contributions, the erasure's engine)."""
    study = study_session.study
    removed = remove_contributions(study_session.worker, studies=[study], policy=study.contributions_on_withdrawal)
    return ", ".join(f"{count} {what.replace('_', ' ')}" for what, count in removed.as_dict().items() if count) or (
        "nothing to remove"
    )


def load_before_first_request() -> None:
    """Load what would make a server process's first request of a kind slow (the writing checks' word
    list, the task modules and broker client a submit's first `enqueue` imports: loaded on first use,
    each process's first submit was the writing submit's p99; bench/RESULTS-docstrings.md). Tests and
    commands keep loading them on first use."""
    load_word_list()
    load_for_enqueue()
    if settings.CELERY_TASK_ALWAYS_EAGER and settings.EMBEDDED_TASKS == "background":
        # The embedded mode has no Celery beat: this process runs its schedule (the reaper included).
        start_embedded_beat()


def long_task_kinds() -> tuple[LongTaskKind, ...]:
    """Every long task with a status row, and what the reaper does when its process dies
    (base/long_tasks.py); tests/test_long_tasks.py checks the task names against the
    services' own constants. Training runs have their own heartbeats and reaper (modeling.training)."""
    from artifacts.models import MonitorRefresh, TaggingJob
    from model_annotators.models import LabellingJob
    from modeling.models import Snapshot
    from quality.models import AggregationRun

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
            requeue_status=JobStatus.PENDING,
        ),
        # A model annotator's labelling job labels the pairs it has not labelled yet: a restart goes on.
        LongTaskKind(
            LabellingJob,
            lost="the model's labelling",
            again="Start the labelling again: pairs already labelled are kept.",
            task="model_annotators.label_pairs",
            requeue_status=JobStatus.PENDING,
        ),
        # A tagging job tags the pairs still untagged, so a restart goes on where the dead one stopped.
        LongTaskKind(
            TaggingJob,
            lost="the tagging job",
            again="Start tagging again.",
            task="artifacts.tag_pairs",
            requeue_status=JobStatus.QUEUED,
            started_field="created_at",
        ),
        # A refresh is made anew by its next trigger (hourly, or new pairs): failed, not restarted.
        LongTaskKind(
            MonitorRefresh,
            lost="the monitor refresh",
            again="The next refresh runs on schedule.",
            started_field="created_at",
        ),
        # An uploaded file's import (all or nothing: a killed one kept nothing) starts again from
        # its file in storage; one run by a command, with the file on that machine, is failed.
        *(
            LongTaskKind(
                model,
                lost="the import",
                again="Run the import again: what is already in the dataset is skipped.",
                task=task,
                requeue_status=ImportStatus.QUEUED,
                restartable=_has_upload,
                after_failure=_discard_upload_of,
            )
            for model, task in ((CorpusImport, PAIRS_UPLOAD_TASK), (PremiseImport, PREMISE_UPLOAD_TASK))
        ),
    )


def _has_upload(row: CorpusImport | PremiseImport) -> bool:
    return bool(row.upload)


def _discard_upload_of(row: CorpusImport | PremiseImport) -> None:
    discard_upload(row.upload)


@app.task(name="annotation_site.reap_long_tasks", ignore_result=True)
def reap_long_tasks() -> list[str]:
    """On the beat (settings.CELERY_BEAT_SCHEDULE; settings.CELERY_IMPORTS registers it in every
    Celery worker): long tasks whose process died are started again or failed."""
    return reap_stale_long_tasks(long_task_kinds())
