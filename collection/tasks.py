"""Celery tasks of the collection app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from base.uploads import import_upload

from .models import PremiseImport
from .premise_import import PremiseImportError
from .premise_uploads import PREMISE_UPLOAD_TASK, import_stored_premises


@shared_task(name=PREMISE_UPLOAD_TASK)
def import_uploaded_premises(import_id: int) -> int | None:
    """A premise file a researcher uploaded on the dashboard (its queued PremiseImport row), imported
    as `import_premises` does; the stored file is removed when the import is done or failed for good."""
    return import_upload(PremiseImport, import_id, import_stored_premises, PremiseImportError)
