"""Where every file a second host must read is kept: Django's storage API, one alias per kind.

The kinds: "uploads" (a researcher's import files, until their import ends), "snapshots" (a done
snapshot's files), "releases" (a release's folder) and "checkpoints" (a training run's weights).

Embedded default: the local disk under DATA_DIR (SNAPSHOT_DIR, CHECKPOINT_DIR), a
FileSystemStorage built per call so that a changed setting (a test's own DATA_DIR) is followed.
With OBJECT_STORAGE_BUCKET set, settings.STORAGES defines each kind as django-storages' S3 backend
with the kind as its key prefix, and every host (web, Celery worker, GPU node) reads what another
wrote: nothing but the database, the broker and this storage is shared (docs/deployment.md).
"""

from pathlib import Path
from typing import Literal

from django.conf import settings
from django.core.files.storage import FileSystemStorage, Storage, storages

FileKind = Literal["uploads", "snapshots", "releases", "checkpoints"]
FILE_KINDS: tuple[FileKind, ...] = ("uploads", "snapshots", "releases", "checkpoints")


def local_folder(kind: FileKind) -> Path:
    """The embedded default's folder for `kind` on this host."""
    if kind == "snapshots":
        return Path(settings.SNAPSHOT_DIR)
    if kind == "checkpoints":
        return Path(settings.CHECKPOINT_DIR)
    return Path(settings.DATA_DIR) / kind


def file_storage(kind: FileKind) -> Storage:
    """The storage that keeps files of `kind`: object storage when configured, else the local folder."""
    if kind not in FILE_KINDS:
        raise ValueError(f"unknown kind of file: {kind!r}")
    if kind in settings.STORAGES:
        return storages[kind]
    return FileSystemStorage(location=local_folder(kind))


def is_shared(kind: FileKind) -> bool:
    """Whether files of `kind` are in object storage (every host reads them) rather than on this host's disk."""
    return kind in settings.STORAGES


def local_path(storage: Storage, name: str) -> str | None:
    """The file's path on this server's disk, or None when the storage is remote (object storage)."""
    try:
        return storage.path(name)
    except NotImplementedError:
        return None
