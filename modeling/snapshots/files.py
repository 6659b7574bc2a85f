"""Reading a done snapshot's files from any host: through the snapshot storage, never a path.

A done snapshot's files are kept in `file_storage("snapshots")` under `<snapshot id>/<file name>`
(the manifest included): SNAPSHOT_DIR/<id>/ on the local default, a key prefix every host reads
with object storage. Older snapshots may lie only in their exporter's folder (`Snapshot.directory`):
every reader here falls back to it when this host has it, and `publish_snapshot` copies it into
the storage.
"""

import json
import shutil
import tempfile
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage

from base.file_storage import file_storage, is_shared, local_path
from modeling.models import Snapshot
from modeling.snapshots.format import MANIFEST_NAME, SnapshotError, manifest_files, sha256_of_file

COPY_BLOCK = 1 << 20


class SnapshotFilesMissing(SnapshotError):
    """A done snapshot whose files are neither in the snapshot storage nor in its folder on this host."""


def snapshot_storage() -> Storage:
    return file_storage("snapshots")


def stored_name(snapshot_id: int, name: str) -> str:
    """The snapshot file's name in the snapshot storage: `<snapshot id>/<file name>`."""
    if not name or Path(name).name != name:
        raise ValueError(f"not a snapshot file name: {name!r}")
    return f"{snapshot_id}/{name}"


def _legacy_file(snapshot: Snapshot, name: str) -> Path | None:
    """The file in the folder an export wrote before the storage kept snapshots, when this host has it."""
    if not snapshot.directory:
        return None
    path = Path(snapshot.directory) / name
    return path if path.is_file() else None


def open_snapshot_file(snapshot: Snapshot, name: str) -> File[Any] | None:
    """The snapshot's file `name` opened for reading (binary; the caller closes it), or None when
    no store this host reaches has it."""
    storage = snapshot_storage()
    key = stored_name(snapshot.pk, name)
    if storage.exists(key):
        return storage.open(key, "rb")
    legacy = _legacy_file(snapshot, name)
    if legacy is not None:
        return File(open(legacy, "rb"), name=name)
    return None


def read_manifest_of(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot's manifest.json, parsed; SnapshotFilesMissing when it cannot be reached from this host."""
    handle = open_snapshot_file(snapshot, MANIFEST_NAME)
    if handle is None:
        raise SnapshotFilesMissing(missing_message(snapshot))
    with handle:
        try:
            return json.loads(handle.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SnapshotError(f"{MANIFEST_NAME} of snapshot {snapshot.pk} is not valid JSON: {exc}") from exc


def snapshot_file_names(snapshot: Snapshot) -> list[str]:
    """Every file of the snapshot, the manifest first, then its data files by name (from its file
    records, or its manifest for a snapshot without records)."""
    names = sorted(snapshot.files.values_list("name", flat=True))
    if not names:
        names = sorted(manifest_files(read_manifest_of(snapshot)))
    return [MANIFEST_NAME, *names]


def snapshot_file_exists(snapshot: Snapshot, name: str) -> bool:
    """Whether this host can read the snapshot's file `name` (storage, or the old export folder here)."""
    return snapshot_storage().exists(stored_name(snapshot.pk, name)) or _legacy_file(snapshot, name) is not None


def snapshot_file_size(snapshot: Snapshot, name: str) -> int | None:
    """The file's size in bytes, or None when this host cannot read it."""
    storage = snapshot_storage()
    key = stored_name(snapshot.pk, name)
    if storage.exists(key):
        return storage.size(key)
    legacy = _legacy_file(snapshot, name)
    return legacy.stat().st_size if legacy is not None else None


def missing_message(snapshot: Snapshot) -> str:
    """Why a done snapshot's files cannot be read here, and what to do about it."""
    where = "the object storage" if is_shared("snapshots") else "this server's snapshot folder"
    return (
        f"the files of snapshot {snapshot.pk} are missing from storage (not in {where}); "
        f"if it was exported before snapshots went through the storage, run "
        f"`manage.py publish_snapshot {snapshot.pk}` on the host that exported it"
    )


def local_snapshot_folder(snapshot: Snapshot) -> Path | None:
    """The folder on this host's disk that holds the snapshot's files as they are (nothing copied),
    or None (object storage: `copy_snapshot_files` or `materialised_snapshot` bring them here)."""
    storage = snapshot_storage()
    manifest_path = local_path(storage, stored_name(snapshot.pk, MANIFEST_NAME))
    if manifest_path is not None and Path(manifest_path).is_file():
        return Path(manifest_path).parent
    legacy = _legacy_file(snapshot, MANIFEST_NAME)
    return legacy.parent if legacy is not None else None


def copy_snapshot_file(snapshot: Snapshot, name: str, target: IO[bytes]) -> int:
    """Write the file's bytes into `target`; the bytes copied. SnapshotFilesMissing when unreachable."""
    handle = open_snapshot_file(snapshot, name)
    if handle is None:
        raise SnapshotFilesMissing(f"{name}: {missing_message(snapshot)}")
    copied = 0
    with handle:
        for block in handle.chunks(COPY_BLOCK):
            target.write(block)
            copied += len(block)
    return copied


def copy_snapshot_files(snapshot: Snapshot, folder: str | Path, names: Collection[str] | None = None) -> Path:
    """Copy the snapshot's files (all, or `names` and the manifest) into `folder` (created); return
    the folder. A file that differs from its manifest's sha256 raises SnapshotError and is not kept."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path = folder / MANIFEST_NAME
    with open(manifest_path, "wb") as target:
        copy_snapshot_file(snapshot, MANIFEST_NAME, target)
    listed = manifest_files(json.loads(manifest_path.read_text(encoding="utf-8")))
    for name, sha in sorted(listed.items()):
        if names is not None and name not in names:
            continue
        path = folder / name
        with open(path, "wb") as target:
            copy_snapshot_file(snapshot, name, target)
        if sha and sha256_of_file(path) != sha:
            path.unlink()
            raise SnapshotError(
                f"hash mismatch: {name} of snapshot {snapshot.pk} does not match its sha256 in {MANIFEST_NAME}"
            )
    return folder


@contextmanager
def materialised_snapshot(snapshot: Snapshot, names: Collection[str] | None = None) -> Iterator[Path]:
    """A local folder with the snapshot's files for the `with` block: their own folder on this disk,
    or a checked temporary copy under DATA_DIR, removed afterwards. Treat it as read-only."""
    here = local_snapshot_folder(snapshot)
    if here is not None:
        yield here
        return
    Path(settings.DATA_DIR).mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".snapshot-{snapshot.pk}-", dir=settings.DATA_DIR))
    try:
        yield copy_snapshot_files(snapshot, scratch, names)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def store_snapshot_folder(snapshot_id: int, folder: str | Path) -> list[str]:
    """Save every file of a written snapshot folder into the snapshot storage under `<id>/`; the names saved.

    What an earlier try left there is removed first, and on any failure what was saved is removed
    again: the storage never holds half a snapshot that the database calls done.
    """
    storage = snapshot_storage()
    remove_stored_files(snapshot_id)
    saved: list[str] = []
    try:
        for path in sorted(Path(folder).iterdir()):
            if not path.is_file():
                continue
            key = stored_name(snapshot_id, path.name)
            with open(path, "rb") as handle:
                got = storage.save(key, File(handle, name=path.name))
            saved.append(got)
            if got != key:  # the storage chose another name: something else wrote here meanwhile
                raise SnapshotError(f"the snapshot storage already held {key} (saved as {got}); export again")
    except BaseException:
        for key in saved:
            storage.delete(key)
        raise
    return [Path(key).name for key in saved]


def remove_stored_files(snapshot_id: int) -> list[str]:
    """Delete every file the snapshot storage holds under `<id>/`; their names."""
    storage = snapshot_storage()
    try:
        _, names = storage.listdir(str(snapshot_id))
    except FileNotFoundError:  # the local default has no folder yet
        return []
    for name in names:
        storage.delete(stored_name(snapshot_id, name))
    return sorted(names)
