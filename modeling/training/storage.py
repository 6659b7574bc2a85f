"""Where checkpoints and snapshot files are stored: Django's storage API (base/file_storage.py).

The local filesystem by default, an S3-compatible object store with OBJECT_STORAGE_BUCKET
(docs/deployment.md); snapshot files are read through modeling/snapshots/files.py.
"""

from pathlib import Path
from typing import TYPE_CHECKING

from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage

from base.file_storage import file_storage
from base.file_storage import local_path as local_path  # re-exported: callers read checkpoints by it

if TYPE_CHECKING:  # models import this module's package
    from modeling.models import Snapshot, TrainingRun


def checkpoint_storage() -> Storage:
    return file_storage("checkpoints")


def read_checkpoint(run: "TrainingRun") -> bytes:
    """A run's checkpoint as stored, unchecked: its file on this host when there is one
    (`checkpoint_path`), else from the checkpoint storage (`checkpoint_name`)."""
    path = Path(run.checkpoint_path) if run.checkpoint_path else None
    if path is not None and path.is_file():
        return path.read_bytes()
    with checkpoint_storage().open(run.checkpoint_name, "rb") as handle:
        data: bytes = handle.read()
    return data


def publish_snapshot(snapshot: "Snapshot") -> list[str]:
    """Copy the files of a snapshot exported before exports went through the storage, from its
    folder on this host (`Snapshot.directory`), into the snapshot storage; the names copied.

    New exports store their files themselves. Files already in the store are left as they are
    (a done snapshot never changes); the store being that very folder copies nothing.
    """
    from modeling.snapshots.files import snapshot_storage, stored_name

    storage = snapshot_storage()
    if not snapshot.directory or not Path(snapshot.directory).is_dir():
        return []  # stored by its export, or not on this host: the command says which
    folder = Path(snapshot.directory)
    if (
        isinstance(storage, FileSystemStorage)
        and (Path(storage.location) / str(snapshot.pk)).resolve() == folder.resolve()
    ):
        return []
    copied: list[str] = []
    for path in sorted(folder.iterdir()):
        name = stored_name(snapshot.pk, path.name)
        if path.is_file() and not storage.exists(name):
            with open(path, "rb") as handle:
                storage.save(name, File(handle, name=path.name))
            copied.append(path.name)
    return copied
