"""Celery tasks of the importers app."""

from celery import shared_task

from base.uploads import import_upload

from .models import CorpusImport
from .services import PAIRS_UPLOAD_TASK, CorpusImportError, import_stored_pairs


@shared_task(name=PAIRS_UPLOAD_TASK)
def import_uploaded_pairs(import_id: int) -> int | None:
    """A corpus file (SNLI/MultiNLI JSONL or TSV) a researcher uploaded on the dashboard (its queued
    CorpusImport row), imported as `import_pairs` does (all or nothing, progress and report on the
    row) from the uploads storage; the stored file is removed when the import is done or failed for
    good. The reaper queues it again when its worker died (annotation_site.wiring.long_task_kinds)."""
    return import_upload(CorpusImport, import_id, import_stored_pairs, CorpusImportError)
