"""Premise files uploaded on the dashboard: checked at once, stored, and imported by a Celery worker
(collection.tasks) with collection.premise_import's rules."""

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from audit import services as audit
from base.uploads import queue_upload
from corpus.models import Dataset, ImportStatus
from corpus.selectors import DatasetNameRefused, dataset_named_by

from .models import PremiseImport
from .premise_import import (
    PremiseImportError,
    PremiseImportReport,
    check_files,
    check_split,
    import_premises,
    resolve_genre,
)

PREMISE_UPLOAD_TASK = "collection.import_uploaded_premises"


def queue_premise_upload(
    uploaded: UploadedFile[Any],
    genre: str,
    dataset: str | None,
    file_format: str = "auto",
    split: str = "",
    *,
    user: Any = None,
) -> PremiseImport:
    """A premise file uploaded on the dashboard: checked here so a refusal is said at once and nothing
    is kept, then stored and its import row queued for a Celery worker after the commit. Raises
    PremiseImportError with the reason."""
    chosen = resolve_genre(genre)
    dataset_slug = (dataset or "").strip() or settings.NLI["DEFAULT_DATASET"]
    if file_format not in ("auto", "text", "jsonl"):
        raise PremiseImportError(f"Unknown format {file_format!r}: one of auto, text, jsonl.")
    split = check_split(split)

    # The name in the uploader's teams (corpus.selectors.dataset_named): one of their datasets, or a
    # new one of their team; another team's dataset of that name is neither reached nor named.
    try:
        named = dataset_named_by(dataset_slug, user)
    except DatasetNameRefused as refused:
        raise PremiseImportError(str(refused)) from None

    def create_import(stored: str, size: int) -> PremiseImport:
        found, _ = Dataset.objects.get_or_create(
            slug=named.slug, defaults={"name": dataset_slug, **({"team_id": named.team_id} if named.team_id else {})}
        )
        audit.record(
            "import.queued",
            actor=user,
            subject=found,
            team_id=found.team_id,
            after={"file": uploaded.name or "upload", "genre": chosen.slug, "kind": "premises"},
            datasets=[found.slug],
        )
        return PremiseImport.objects.create(
            dataset=found,
            genre=chosen,
            source=(uploaded.name or "upload")[:255],
            bytes_total=size,
            status=ImportStatus.QUEUED,
            upload=stored,
            file_format=file_format,
            split=split,
        )

    return queue_upload(
        uploaded, PREMISE_UPLOAD_TASK, create_import, check=lambda path: check_files([path]), refusal=PremiseImportError
    )


def import_stored_premises(record: PremiseImport, path: Path) -> PremiseImportReport:
    """An upload's import as its Celery task runs it (base.uploads.import_upload)."""
    return import_premises(
        [path], record.genre, record.dataset, file_format=record.file_format, record=record, split=record.split
    )
