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
from typing import Any, Literal

from django.conf import settings
from django.core.files.storage import FileSystemStorage, Storage, storages

FileKind = Literal["uploads", "snapshots", "releases", "checkpoints"]
FILE_KINDS: tuple[FileKind, ...] = ("uploads", "snapshots", "releases", "checkpoints")
S3_BACKEND = "storages.backends.s3.S3Storage"


def object_storage_aliases(
    bucket: str,
    *,
    endpoint_url: str | None = None,
    region: str | None = None,
    access_key: str | None = None,
    secret_key: str | None = None,
) -> dict[str, dict[str, Any]]:
    """settings.STORAGES entries for every kind in one S3-compatible bucket, each kind its key prefix.

    One builder for the settings (OBJECT_STORAGE_* variables) and for tests that point a running
    process at an S3 server, so both configure the very same backend. Empty values mean "not set"
    (boto3's own defaults: the AWS endpoint, its credential chain).
    """
    options = {
        "bucket_name": bucket,
        "endpoint_url": endpoint_url or None,
        "region_name": region or None,
        "access_key": access_key or None,
        "secret_key": secret_key or None,
        "default_acl": None,
        # A name already taken is never silently replaced: a done snapshot or checkpoint never changes.
        "file_overwrite": False,
    }
    return {kind: {"BACKEND": S3_BACKEND, "OPTIONS": dict(options, location=kind)} for kind in FILE_KINDS}


def local_folder(kind: FileKind) -> Path:
    """The embedded default's folder for `kind` on this host."""
    if kind == "snapshots":
        return Path(settings.SNAPSHOT_DIR)
    if kind == "checkpoints":
        return Path(settings.CHECKPOINT_DIR)
    return Path(settings.DATA_DIR) / kind


def _known(kind: FileKind) -> FileKind:
    if kind not in FILE_KINDS:
        raise ValueError(f"unknown kind of file: {kind!r}")
    return kind


def file_storage(kind: FileKind) -> Storage:
    """The storage that keeps files of `kind`: object storage when configured, else the local folder."""
    if _known(kind) in settings.STORAGES:
        return storages[kind]
    return FileSystemStorage(location=local_folder(kind))


def is_shared(kind: FileKind) -> bool:
    """Whether files of `kind` are in object storage (every host reads them) rather than on this host's disk."""
    return _known(kind) in settings.STORAGES


def local_path(storage: Storage, name: str) -> str | None:
    """The file's path on this server's disk, or None when the storage is remote (object storage)."""
    try:
        return storage.path(name)
    except NotImplementedError:
        return None
