"""Celery tasks of the collection app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from annotation_site.uploads import discard_upload

from .premise_import import PREMISE_UPLOAD_TASK, PremiseImportError, import_premises


@shared_task(name=PREMISE_UPLOAD_TASK)
def import_uploaded_premises(path: str, genre: str, dataset: str, file_format: str = "auto") -> int | None:
    """A premise file a researcher uploaded on the dashboard, imported as `import_premises` does
    (all or nothing, progress on its PremiseImport row); the upload is removed when it ends.
    Returns the import's id, or None if it could not start (the row then says nothing: the
    dashboard checked the file before queueing it)."""
    try:
        return import_premises([path], genre, dataset, file_format=file_format).import_id
    except PremiseImportError:
        return None
    finally:
        discard_upload(path)
