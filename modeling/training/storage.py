"""Where checkpoints (and snapshot files served to GPU nodes) are stored: Django's storage API.

The embedded default is the local filesystem (settings.CHECKPOINT_DIR, settings.SNAPSHOT_DIR).
A lab with an S3-compatible object store sets OBJECT_STORAGE_BUCKET (and friends, see
docs/gpu-nodes.md); settings then define the storage aliases "checkpoints" and "snapshots" with
django-storages' S3 backend, and every reader and writer here goes through the same calls.
"""

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.files.storage import FileSystemStorage, Storage

from annotation_site.file_storage import file_storage, local_path  # noqa: F401 - local_path re-exported

if TYPE_CHECKING:  # models import this module's package
    from modeling.models import Snapshot


def checkpoint_storage() -> Storage:
    return file_storage("checkpoints")


def snapshot_storage() -> Storage:
    return file_storage("snapshots")


def publish_snapshot(snapshot: "Snapshot") -> list[str]:
    """Copy a done snapshot's files from this server's SNAPSHOT_DIR into the snapshot storage.

    Only useful with object storage (OBJECT_STORAGE_BUCKET): the export writes locally, and the
    file endpoint serves the local folder first, the store second. Files already in the store
    are left as they are (a done snapshot never changes). Returns the names copied.
    """
    from pathlib import Path

    storage = snapshot_storage()
    folder = Path(snapshot.directory or Path(settings.SNAPSHOT_DIR) / str(snapshot.pk))
    if isinstance(storage, FileSystemStorage) and Path(storage.location).resolve() == folder.parent.resolve():
        return []  # the store is this very folder
    copied: list[str] = []
    for path in sorted(folder.iterdir()):
        name = f"{snapshot.pk}/{path.name}"
        if path.is_file() and not storage.exists(name):
            with open(path, "rb") as handle:
                storage.save(name, handle)
            copied.append(path.name)
    return copied
