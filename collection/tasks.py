"""Celery tasks of the collection app (the beat schedule names them: settings.CELERY_BEAT_SCHEDULE)."""

from celery import shared_task

from annotation_site.uploads import import_upload

from .premise_import import PREMISE_UPLOAD_TASK, PremiseImportError, import_premises


@shared_task(name=PREMISE_UPLOAD_TASK)
def import_uploaded_premises(path: str, genre: str, dataset: str, file_format: str = "auto") -> int | None:
    """A premise file a researcher uploaded on the dashboard, imported as `import_premises` does
    (all or nothing, progress on its PremiseImport row); the upload is removed when it ends."""
    return import_upload(
        path, lambda: import_premises([path], genre, dataset, file_format=file_format), PremiseImportError
    )
