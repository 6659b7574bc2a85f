"""A GPU node's cache of snapshots fetched from the platform, keyed by content hash, with a size limit.

    <root>/<content hash>/            a complete, verified snapshot (manifest.json + the JSONL files)
    <root>/.incoming-<content hash>/  a fetch in progress: finished files and `<name>.part` ones,
                                      which the next try resumes (HTTP Range) instead of starting over
    <root>/.lock-<content hash>       one fetch of a snapshot at a time on this machine

A folder appears under its hash only by one rename once every file matched its SHA-256, so a
reader never sees half a snapshot. Least recently used snapshots are evicted once the cache
holds more than `max_bytes` (never the one being used). Plain Python (no Django, no torch).
"""

import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from modeling.snapshots.format import (
    MANIFEST_NAME,
    SnapshotError,
    content_hash,
    manifest_files,
    sha256_of_file,
    training_files,
)

LAST_USED = ".last-used"
# fetch_file(name, part path) brings one file into the part file (resuming it); the bytes it downloaded
FetchFile = Callable[[str, Path], int]


class SnapshotCache:
    def __init__(self, root: str | Path, max_bytes: int | str) -> None:
        self.root = Path(root)
        self.max_bytes = int(max_bytes)

    def folder(self, snapshot_hash: str) -> Path:
        if not snapshot_hash or not all(c in "0123456789abcdef" for c in snapshot_hash):
            raise SnapshotError(f"not a content hash: {snapshot_hash!r}")
        return self.root / snapshot_hash

    def get(self, snapshot_hash: str, fetch_file: FetchFile) -> tuple[Path, dict[str, object]]:
        """The folder of this snapshot, fetched unless cached; and a report of where it came from.

        `fetch_file(name, part_path)` brings one file into `part_path`, resuming what is there.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.folder(snapshot_hash)
        with self._lock(snapshot_hash):
            if final.is_dir():
                self._touch(final)
                self.evict(keep=snapshot_hash)
                return final, {"source": "cache", "bytes_downloaded": 0, "seconds": 0.0}
            started = time.monotonic()
            downloaded = self._fetch(snapshot_hash, fetch_file)
            seconds = round(time.monotonic() - started, 3)
            self._touch(final)
        self.evict(keep=snapshot_hash)
        # Every file matched the manifest, and the manifest the content hash, on the way in.
        return final, {"source": "download", "bytes_downloaded": downloaded, "seconds": seconds, "verified": True}

    def discard(self, snapshot_hash: str) -> None:
        """Forget a cached snapshot (its files no longer match: edited or damaged on this disk)."""
        shutil.rmtree(self.folder(snapshot_hash), ignore_errors=True)

    def _fetch(self, snapshot_hash: str, fetch_file: FetchFile) -> int:
        incoming = self.root / f".incoming-{snapshot_hash}"
        incoming.mkdir(exist_ok=True)
        downloaded = 0
        # The manifest first: its file list must give the content hash the run names.
        manifest_part = incoming / f"{MANIFEST_NAME}.part"
        manifest_part.unlink(missing_ok=True)  # small; never resumed
        downloaded += fetch_file(MANIFEST_NAME, manifest_part)
        try:
            manifest = json.loads(manifest_part.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SnapshotError(f"{MANIFEST_NAME} downloaded from the platform is not valid JSON: {exc}") from exc
        listed = manifest_files(manifest)
        if not listed or not all(listed.values()) or content_hash(listed) != snapshot_hash:
            raise SnapshotError(
                f"hash mismatch: {MANIFEST_NAME} downloaded from the platform does not give the content hash "
                f"{snapshot_hash[:12]}… the run names"
            )
        for name, sha in sorted(training_files(manifest).items()):
            done = incoming / name
            if done.exists() and sha256_of_file(done) == sha:
                continue
            part = incoming / f"{name}.part"
            resumed_from = part.stat().st_size if part.exists() else 0
            downloaded += fetch_file(name, part)
            got = sha256_of_file(part)
            if got != sha and resumed_from:
                # What an earlier try left was not a prefix of this file: start it over once.
                part.unlink()
                downloaded += fetch_file(name, part)
                got = sha256_of_file(part)
            if got != sha:
                part.unlink()
                raise SnapshotError(
                    f"hash mismatch: {name} does not match its sha256 in {MANIFEST_NAME} "
                    f"(downloaded from the platform: the server's copy differs from what was exported)"
                )
            part.replace(done)
        manifest_part.replace(incoming / MANIFEST_NAME)
        incoming.rename(self.folder(snapshot_hash))
        return downloaded

    def entries(self) -> list[tuple[float, int, str]]:
        """[(last used, bytes, hash)] of the complete snapshots, least recently used first."""
        found: list[tuple[float, int, str]] = []
        if not self.root.is_dir():
            return found
        for folder in self.root.iterdir():
            if folder.name.startswith(".") or not folder.is_dir():
                continue
            marker = folder / LAST_USED
            used = marker.stat().st_mtime if marker.exists() else folder.stat().st_mtime
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            found.append((used, size, folder.name))
        return sorted(found)

    def evict(self, keep: str | None = None) -> list[str]:
        """Remove least recently used snapshots until the cache fits in max_bytes; their hashes."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        evicted: list[str] = []
        for _, size, name in entries:
            if total <= self.max_bytes:
                break
            if name == keep:
                continue
            with self._lock(name, blocking=False) as locked:
                if not locked:
                    continue  # another process is using or fetching it right now
                shutil.rmtree(self.root / name, ignore_errors=True)
            total -= size
            evicted.append(name)
        return evicted

    def _touch(self, folder: Path) -> None:
        marker = folder / LAST_USED
        marker.touch()
        now = time.time()
        os.utime(marker, (now, now))

    @contextmanager
    def _lock(self, snapshot_hash: str, blocking: bool = True) -> Iterator[bool]:
        path = self.root / f".lock-{snapshot_hash}"
        with open(path, "a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
