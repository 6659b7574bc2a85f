"""Celery tasks of the importers app."""

from celery import shared_task

from annotation_site.uploads import import_upload

from .services import PAIRS_UPLOAD_TASK, CorpusImportError, import_pairs_file


@shared_task(name=PAIRS_UPLOAD_TASK)
def import_uploaded_pairs(path: str, dataset: str, split: str | None = None, genre: str | None = None) -> int | None:
    """A corpus file (SNLI/MultiNLI JSONL or TSV) a researcher uploaded on the dashboard, imported
    as `import_pairs` does (all or nothing, progress and report on its CorpusImport row); the
    upload is removed when it ends."""
    return import_upload(path, lambda: import_pairs_file(path, dataset, split=split, genre=genre), CorpusImportError)
