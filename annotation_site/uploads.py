"""Files a researcher uploads for an import: kept under DATA_DIR/uploads until the import that reads
them ends (the Celery worker reads them there, so DATA_DIR is shared with the workers as the
snapshots' folder is)."""

import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from .celery import enqueue

SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
UPLOAD_FOLDER_NAME = re.compile(r"[0-9a-f]{32}")


def upload_folder() -> Path:
    return Path(settings.DATA_DIR) / "uploads"


def discard_upload(path: str | Path) -> None:
    """Remove an upload's folder once its import has ended (done or failed)."""
    folder = Path(path).parent
    # Judged by its shape, not by this process's DATA_DIR: the worker removing it may have another.
    if folder.parent.name == "uploads" and UPLOAD_FOLDER_NAME.fullmatch(folder.name):
        shutil.rmtree(folder, ignore_errors=True)


def queue_upload(
    uploaded: UploadedFile,
    task: str,
    *args: Any,
    check: Callable[[Path], object] | None = None,
    refusal: type[Exception] = Exception,
) -> Path:
    """The upload saved in a folder of its own, keeping its name (imports read the split from it,
    e.g. *_dev.jsonl) but for characters other than letters, digits, dots, dashes and underscores;
    then `check(path)`, whose `refusal` (an error of one message) removes it and is raised again
    naming the file as uploaded; else the Celery `task` queued with its path and `args` after the
    caller's commit (the task imports it with `import_upload`)."""
    name = SAFE_NAME.sub("_", Path(uploaded.name or "upload").name).strip("._") or "upload"
    folder = upload_folder() / uuid.uuid4().hex
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name[:120]
    with open(path, "wb") as handle:
        for chunk in uploaded.chunks():
            handle.write(chunk)
    if check is not None:
        try:
            check(path)
        except refusal as refused:
            discard_upload(path)
            raise refusal(str(refused).replace(str(path), uploaded.name or "")) from None
    transaction.on_commit(lambda: enqueue(task, str(path), *args))
    return path


def import_upload(path: str, run_import: Callable[[], Any], refusal: type[Exception]) -> int | None:
    """A queued upload imported by its Celery task (`run_import()`, whose report has the id of its
    import row), the upload removed however it ends. Returns the import's id, or None if it could
    not start (`refusal` raised: no row says so, the dashboard checked the file before queueing it)."""
    try:
        return run_import().import_id
    except refusal:
        return None
    finally:
        discard_upload(path)
