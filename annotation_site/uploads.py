"""Files a researcher uploads for an import: kept under DATA_DIR/uploads until the import that reads
them ends (the Celery worker reads them there, so DATA_DIR is shared with the workers as the
snapshots' folder is)."""

import re
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
UPLOAD_FOLDER_NAME = re.compile(r"[0-9a-f]{32}")


def upload_folder() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def store_upload(uploaded: UploadedFile) -> Path:
    """The upload saved under a folder of its own, keeping its name (imports read the split from
    it, e.g. *_dev.jsonl) with anything but letters, digits, dots, dashes and underscores replaced."""
    name = SAFE_NAME.sub("_", Path(uploaded.name or "upload").name).strip("._") or "upload"
    folder = upload_folder() / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name[:120]
    with open(path, "wb") as handle:
        for chunk in uploaded.chunks():
            handle.write(chunk)
    return path


def discard_upload(path: str | Path) -> None:
    """Remove an upload's folder once its import has ended (done or failed)."""
    folder = Path(path).parent
    # Judged by its shape, not by this process's DATA_DIR: the worker removing it may have another.
    if folder.parent.name == "uploads" and UPLOAD_FOLDER_NAME.fullmatch(folder.name):
        shutil.rmtree(folder, ignore_errors=True)
