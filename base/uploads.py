"""Files a researcher uploads for an import: bounded while the request streams, kept in the
"uploads" storage (base/file_storage.py) until the import that reads them ends, and
imported by a Celery worker that may run on another host (it reads the file from that storage,
never from the web host's disk).

An upload's import is an ordinary long task (base/long_tasks.py): its row is created
`queued`, in the transaction that queues its task, so the dashboard lists it the moment the page
answers; the worker takes it (queued -> running) and beats; a worker killed mid-way leaves the
row running and silent, and the reaper queues it again (the import is all or nothing, so a restart
starts from scratch) up to LONG_TASK_MAX_RESTARTS times, then fails it. The stored file is removed
once the import is done or has failed for good, never while a restart still needs it.
"""

import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

from django.conf import settings
from django.core.files.storage import Storage
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.db import transaction
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone

from .file_storage import file_storage, local_folder, local_path
from .long_tasks import take
from .task_queue import enqueue

SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
# The form's other fields and the multipart boundaries beside the file: a body larger than the
# limit by more than this holds a file over the limit, refused before its first byte is read.
FORM_ALLOWANCE = 1 << 20
# Read by the view after the body is parsed (upload_refusal): why the file was not taken.
_REFUSAL_ATTRIBUTE = "upload_refusal"
# The rest of a refused body is read and dropped in pieces of this size.
_DRAIN_CHUNK = 1 << 16
# The status names the import rows share (corpus.models.ImportStatus; this module names no app).
QUEUED, RUNNING, FAILED = "queued", "running", "failed"

Row = TypeVar("Row", bound=Model)


def upload_folder() -> Path:
    """The embedded default's folder of stored uploads on this host (unused when they are in object storage)."""
    return local_folder("uploads")


def upload_storage() -> Storage:
    return file_storage("uploads")


def discard_upload(name: str) -> None:
    """Remove a stored upload (its import is done, or failed for good), and its own folder on a local disk."""
    if not name:
        return
    storage = upload_storage()
    storage.delete(name)
    path = local_path(storage, name)
    if path is not None:
        folder = Path(path).parent
        # Only the upload's own uuid folder, never the uploads folder itself.
        if folder != Path(storage.path("")) and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)


def readable_size(size: int) -> str:
    """1073741824 -> "1 GiB", 1572864 -> "1.5 MiB"."""
    value, unit = float(size), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"


def size_refusal(file_name: str) -> str:
    """What a researcher reads when a file is over the limit: the limit and the setting that sets it."""
    limit = int(settings.UPLOAD_MAX_BYTES)
    return (
        f"{file_name or 'The file'} is larger than the upload limit of {readable_size(limit)} "
        f"(the UPLOAD_MAX_BYTES setting, {limit} bytes); nothing was uploaded or imported."
    )


class LimitedUploadHandler(FileUploadHandler):
    """First of settings.FILE_UPLOAD_HANDLERS: a file over settings.UPLOAD_MAX_BYTES stops the
    upload while the request body streams, before Django's own handlers write what is over.

    A body whose length already says so is refused at the file's first byte (nothing of it is
    written); otherwise the file is refused at the chunk that crosses the limit. The form's fields
    before the file (the CSRF token, the kind of import) are parsed as usual, and the rest of the
    body is read in fixed pieces and dropped (not written, not held), so the browser gets the page
    with the message rather than a connection reset. (Django's own draining after StopUpload
    reads the body line by line: a binary file without a newline would be one line, held whole.)
    The view asks `upload_refusal(request)`."""

    body: IO[bytes] | None = None
    body_length: int | None = None

    def handle_raw_input(
        self,
        input_data: IO[bytes],
        META: dict[str, str],
        content_length: int,
        boundary: str,
        encoding: str | None = None,
    ) -> None:
        self.body, self.body_length = input_data, content_length
        return None  # the multipart parser goes on as usual

    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        if self.body_length is not None and self.body_length > int(settings.UPLOAD_MAX_BYTES) + FORM_ALLOWANCE:
            self._refuse()

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        if start + len(raw_data) > int(settings.UPLOAD_MAX_BYTES):
            self._refuse()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handlers keep the file

    def _refuse(self) -> None:
        if self.request is not None:
            setattr(self.request, _REFUSAL_ATTRIBUTE, size_refusal(self.file_name or ""))
        if self.body is not None:
            while self.body.read(_DRAIN_CHUNK):
                pass
        raise StopUpload(connection_reset=True)  # drained already: Django reads no further


def upload_refusal(request: HttpRequest) -> str | None:
    """Why the request's file was refused while it streamed (LimitedUploadHandler), or None."""
    request.FILES  # noqa: B018 - parses the body, which is when the handler refuses
    return getattr(request, _REFUSAL_ATTRIBUTE, None)


def stored_name(uploaded: UploadedFile[Any]) -> str:
    """A folder of its own, keeping the file's name (imports read the split from it, e.g. *_dev.jsonl)
    but for characters other than letters, digits, dots, dashes and underscores."""
    name = SAFE_NAME.sub("_", Path(uploaded.name or "upload").name).strip("._") or "upload"
    return f"{uuid.uuid4().hex}/{name[:120]}"


@contextmanager
def _local_copy(uploaded: UploadedFile[Any]) -> Iterator[Path]:
    """The uploaded file as a path on this host: Django's temporary file, or a small upload written out."""
    temporary = getattr(uploaded, "temporary_file_path", None)
    if temporary is not None:
        yield Path(temporary())
        return
    with tempfile.TemporaryDirectory(prefix="upload-check-") as folder:
        path = Path(folder) / stored_name(uploaded).rsplit("/", 1)[-1]
        with open(path, "wb") as handle:
            for chunk in uploaded.chunks():
                handle.write(chunk)
        yield path


def queue_upload(
    uploaded: UploadedFile[Any],
    task: str,
    create_import: Callable[[str, int], Row],
    *,
    check: Callable[[Path], object] | None = None,
    refusal: type[Exception] = Exception,
) -> Row:
    """An upload queued for import: `check(path)` first, on this host's copy (its `refusal`, an error
    of one message, is raised again naming the file as uploaded, and nothing is kept); then the
    file stored in the "uploads" storage, and in one transaction its import row made `queued` by
    `create_import(stored name, size)` and the Celery `task` queued with the row's pk after the
    commit. The row is what the caller gets: the dashboard lists it at once."""
    if check is not None:
        with _local_copy(uploaded) as path:
            try:
                check(path)
            except refusal as refused:
                raise refusal(str(refused).replace(str(path), uploaded.name or "")) from None
    storage = upload_storage()
    name = storage.save(stored_name(uploaded), uploaded)
    try:
        with transaction.atomic():
            row = create_import(name, uploaded.size or 0)
            transaction.on_commit(lambda: enqueue(task, row.pk))
    except BaseException:
        discard_upload(name)  # no row points at it
        raise
    return row


@contextmanager
def upload_path(name: str) -> Iterator[Path]:
    """A stored upload as a path the importers can open: the file itself on a local disk, else a
    temporary copy streamed from object storage (removed when the block ends), its name kept."""
    storage = upload_storage()
    path = local_path(storage, name)
    if path is not None:
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="upload-") as folder:
        copy = Path(folder) / name.rsplit("/", 1)[-1]
        with storage.open(name, "rb") as source, open(copy, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        yield copy


def import_upload(
    model: type[Row], import_id: int, run_import: Callable[[Row, Path], object], refusal: type[Exception]
) -> int | None:
    """A queued upload's import, run by its Celery task (first delivery or the reaper's restart):
    the row taken queued -> running (a second delivery, or a row done or failed meanwhile, is left
    alone: None), `run_import(row, path)` on the stored file, which is removed once the import is
    done or has failed (a killed process removes nothing: its restart reads the file again).
    Returns the import's id, or None when it did not run or the import refused the file (`refusal`:
    the row says why)."""
    if not take(model, import_id, waiting=(QUEUED,), bytes_read=0):
        return None
    row = model._default_manager.get(pk=import_id)
    name: str = getattr(row, "upload", "")
    try:
        if not name or not upload_storage().exists(name):
            raise refusal(f"the uploaded file is no longer in storage ({name or 'no name'}); upload it again")
        with upload_path(name) as path:
            run_import(row, path)
    except Exception as error:
        ours = model._default_manager.filter(pk=import_id, restarts=getattr(row, "restarts", 0))
        # The import marks its own failures; a refusal before it started is marked here.
        ours.filter(status=RUNNING).update(
            status=FAILED, error=str(error) or type(error).__name__, finished_at=timezone.now()
        )
        if ours.filter(status=FAILED).exists():
            discard_upload(name)  # failed for good; a row the reaper restarted meanwhile keeps its file
        if isinstance(error, refusal):
            return None
        raise
    discard_upload(name)
    return import_id
