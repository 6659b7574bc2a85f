"""Writes for training runs: launch, execute (on a node), heartbeat, reap the stale ones.

A run is queued (launch), running (a node leased it and sends heartbeats), then done or failed.
The node's reports reach the row here directly (DatabaseReporter) or through the node API. A node
that dies mid-run is caught two ways: Celery redelivers the message (acks_late) and the next
attempt takes the run over, or `reap_stale_runs` fails (or requeues) runs whose heartbeat is
older than settings.TRAINING_STALE_MINUTES.
"""

import functools
import hashlib
import json
import mmap
import socket
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from artifacts.selectors import run_tag_accuracy
from audit import services as audit
from base.long_tasks import JobStatus
from base.task_queue import enqueue
from corpus.models import Genre
from modeling.models import RunStatus, Snapshot, TrainingRun
from modeling.refusals import missing, not_ready
from modeling.snapshots import files as snapshot_files
from modeling.snapshots.format import MANIFEST_NAME, TRAIN_FILE
from teams import access

from .config import MODEL_NAMES, ConfigError, resolve_config
from .run_writes import fail_run, finish_run, lease_run, record_progress, store_checkpoint
from .runner import RunAbandoned, RunReporter, RunSpec, execute_attempt, execute_packed_attempts  # noqa: F401 (RunAbandoned re-exported)
from .snapshot_cache import SnapshotCache

if TYPE_CHECKING:
    from tqdm import tqdm

TRAINING_TASK = "modeling.tasks.run_training"
PACKED_TRAINING_TASK = "modeling.tasks.run_packed_training"
REAPER_TASK = "modeling.tasks.reap_training_runs"


class LaunchRefused(ValidationError):
    """A training run that cannot be launched; `message_dict` names each bad field (snapshot, model, config)."""


def parse_config_text(text: str | None) -> dict[str, Any]:
    """A config typed as JSON text (the dashboard's box, a command's --config): a dict, or LaunchRefused."""
    text = (text or "").strip()
    if not text:
        return {}
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise LaunchRefused(
            {"config": f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"}
        ) from None
    if not isinstance(config, dict):
        raise LaunchRefused({"config": 'a JSON object is needed, e.g. {"epochs": 2}'})
    return config


def _snapshot_to_train_on(snapshot: Snapshot | int | str) -> tuple[Snapshot | None, str | ValidationError | None]:
    """The done Snapshot named by a Snapshot, its id or the id as text; or the reason it cannot be used."""
    if not isinstance(snapshot, Snapshot):
        if isinstance(snapshot, bool) or not str(snapshot).strip().isdigit():
            return None, "Choose a snapshot to train on (its id)."
        found = Snapshot.objects.filter(pk=int(str(snapshot).strip())).first()
        if found is None:
            return None, missing(f"Snapshot {snapshot} does not exist.")
        snapshot = found
    if snapshot.status != JobStatus.DONE:
        return None, not_ready(f"Snapshot {snapshot.pk} is {snapshot.status}, not done; wait for its export to finish.")
    # Refused here, in words, rather than by a node after the queue. The storage is asked, not a
    # path of the exporting host: a done snapshot is readable from every host, all of it or none.
    train_size = snapshot_files.snapshot_file_size(snapshot, TRAIN_FILE)
    if train_size is None and not snapshot_files.snapshot_file_exists(snapshot, MANIFEST_NAME):
        return None, not_ready(
            f"Snapshot {snapshot.pk} cannot be trained on: {snapshot_files.missing_message(snapshot)}."
        )
    if not train_size:
        return None, (
            f"Snapshot {snapshot.pk} has no training pairs (no train split): make a snapshot whose "
            "splits include train to train on it."
        )
    return snapshot, None


def _train_genre_problem(snapshot: Snapshot, genre: str) -> ValidationError | None:
    """Why training on one genre of this snapshot cannot work, or None: refused at launch, not
    discovered by a node after the queue."""
    known = dict(Genre.objects.values_list("slug", "name"))
    if genre not in known:
        return missing(f"unknown train_genre {genre!r}; genres: {', '.join(sorted(known))}")
    if snapshot.filters.get("genres") and genre not in snapshot.filters["genres"]:
        return not_ready(
            f"snapshot {snapshot.pk} leaves out genre {genre!r} (its genres: {', '.join(snapshot.filters['genres'])})"
        )
    needle = json.dumps({"genre": genre})[1:-1].encode()
    folder = snapshot_files.local_snapshot_folder(snapshot)
    if folder is not None and (folder / TRAIN_FILE).is_file():
        mentioned = _file_mentions(folder / TRAIN_FILE, needle)
    else:
        handle = snapshot_files.open_snapshot_file(snapshot, TRAIN_FILE)
        if handle is None:
            return None  # no train file: _snapshot_to_train_on says so
        with handle:
            mentioned = _stream_mentions(handle.chunks(SEARCH_BLOCK), needle)
    if not mentioned:
        return not_ready(f"genre {known[genre]!r} has no training pairs in snapshot {snapshot.pk}")
    return None


# Bytes read at a time when a train file is searched in object storage rather than on this disk.
SEARCH_BLOCK = 8 << 20


def _file_mentions(path: Path, needle: bytes) -> bool:
    """Whether the bytes occur in the file: one pass through a memory map (a MultiNLI train file in well under a second)."""
    if path.stat().st_size == 0:
        return False
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        return mapped.find(needle) != -1


def _stream_mentions(blocks: Iterable[bytes], needle: bytes) -> bool:
    """Whether the bytes occur in a file read block by block (an occurrence across two blocks included)."""
    tail = b""
    for block in blocks:
        window = tail + block
        if needle in window:
            return True
        tail = window[-(len(needle) - 1) :] if len(needle) > 1 else b""
    return False


def validate_launch(
    snapshot: Snapshot | int | str, model: str, *, config: dict[str, Any] | str | None = None
) -> tuple[Snapshot, dict[str, Any]]:
    """Check a launch request once for every caller: (Snapshot, resolved config) or LaunchRefused.

    `config` is a dict or JSON text. Views, the API and commands only translate the error.
    """
    errors: dict[str, str | ValidationError | list[ValidationError]] = {}
    found, problem = _snapshot_to_train_on(snapshot)
    if problem:
        errors["snapshot"] = problem
    resolved: dict[str, Any] | None = None
    if model not in MODEL_NAMES:
        errors["model"] = f"Unknown model {model!r}; choose one of {', '.join(MODEL_NAMES)}."
    else:
        try:
            if not isinstance(config, dict):
                config = parse_config_text(config)
            resolved = resolve_config(model, config)
        except LaunchRefused as refused:
            errors.update(refused.error_dict)
        except ConfigError as error:
            errors["config"] = str(error)
    # With no errors the snapshot was found and the config resolved.
    if not errors and found is not None and resolved is not None and resolved.get("train_genre"):
        problem = _train_genre_problem(found, resolved["train_genre"])
        if problem:
            errors["config"] = problem
    if errors:
        raise LaunchRefused(dict(errors.items()))
    assert found is not None and resolved is not None  # each None only beside an error
    if resolved["embeddings"] is None:
        resolved["embeddings"] = settings.EMBEDDINGS_FILE or "random"
    return found, resolved


def launch_training_run(
    snapshot: Snapshot | int | str,
    model: str,
    *,
    config: dict[str, Any] | str | None = None,
    user: User | AnonymousUser | None = None,
    enqueue: bool = True,
) -> TrainingRun:
    """A queued TrainingRun, sent to the `gpu` queue once the transaction commits.

    `enqueue=False` leaves it queued for the caller to run in-process (`train --in-process`).
    Raises LaunchRefused naming each bad field.
    """
    if user is not None and user.is_authenticated:
        # Another team's snapshot is as unknown as a missing one (teams.access), said in the same words.
        named = snapshot if isinstance(snapshot, Snapshot) else None
        if named is None and str(snapshot).strip().isdigit():
            named = Snapshot.objects.filter(pk=int(str(snapshot).strip())).first()
        if named is not None and not access.may(user, named.team_id, access.RESEARCH):
            raise LaunchRefused({"snapshot": missing(f"Snapshot {snapshot} does not exist.")})
    found, resolved = validate_launch(snapshot, model, config=config)
    reap_stale_runs()
    with transaction.atomic():
        run = TrainingRun.objects.create(
            snapshot=found,
            snapshot_hash=found.content_hash,
            model=model,
            config=resolved,
            created_by=user if isinstance(user, User) and user.pk else None,
            status=RunStatus.QUEUED,
            total_epochs=resolved["epochs"] if model != "majority" else 0,
            celery_task_id=str(uuid.uuid4()),
        )
        audit.record(
            "training.launched",
            actor=user,
            subject=run,
            team_id=found.team_id,
            after={"snapshot": found.pk, "model": model, "config": resolved},
        )
        if enqueue:
            transaction.on_commit(lambda: _enqueue(run.pk, run.celery_task_id))
    return run


def _enqueue(run_id: int, task_id: str) -> None:
    enqueue(TRAINING_TASK, run_id, task_id=task_id)


def _enqueue_pack(run_ids: list[int], task_id: str) -> None:
    enqueue(PACKED_TRAINING_TASK, run_ids, task_id=task_id)


# What runs of one model must share to train in one step: the keys packed.train_packed compares
# (checkpoint.HYPER_KEYS and the step's own), named here so the web process groups a launch
# without importing torch.
PACK_SHARED_KEYS = (
    "embedding_dim",
    "hidden_dim",
    "dropout",
    "mlp_layers",
    "batch_size",
    "epochs",
    "lr",
    "grad_clip",
    "device",
)


def launch_packed_training_runs(
    snapshot: Snapshot | int | str,
    model: str,
    configs: list[dict[str, Any]],
    *,
    user: User | AnonymousUser | None = None,
) -> list[TrainingRun]:
    """Queued runs of one model on one snapshot (a genre matrix), one per config, all or none.

    The runs that can share a training step go to the `gpu` queue as ONE task
    (`run_packed_training`) under one attempt id: a redelivered message takes every run of it
    over, and a run the reaper requeues gets an attempt of its own, which the pack's message then
    skips. Other runs go as launch_training_run sends them. Raises LaunchRefused naming each bad field.
    """
    with transaction.atomic():
        runs = [launch_training_run(snapshot, model, config=config, user=user, enqueue=False) for config in configs]
        packs: dict[tuple[Any, ...], list[TrainingRun]] = {}
        for run in runs:
            shape = tuple(run.config.get(key) for key in PACK_SHARED_KEYS)
            packs.setdefault((run.snapshot_hash, *shape), []).append(run)
        for pack in packs.values():
            if len(pack) == 1 or model == "majority":
                for run in pack:
                    transaction.on_commit(functools.partial(_enqueue, run.pk, run.celery_task_id))
                continue
            attempt = str(uuid.uuid4())
            TrainingRun.objects.filter(pk__in=[run.pk for run in pack]).update(celery_task_id=attempt)
            for run in pack:
                run.celery_task_id = attempt
            transaction.on_commit(functools.partial(_enqueue_pack, [run.pk for run in pack], attempt))
    return runs


class DatabaseReporter(RunReporter):
    """The embedded mode and Celery workers that share the platform's database and disk."""

    def lease(self, run_id: int, hostname: str, attempt: str | None) -> RunSpec | None:
        run = lease_run(run_id, hostname, attempt)
        if run is None:
            return None
        snapshot = run.snapshot
        if snapshot.content_hash != run.snapshot_hash:
            fail_run(
                run.pk,
                run.celery_task_id,
                run.lease_id,
                (
                    f"ValueError: hash mismatch: snapshot {snapshot.pk} now has content hash {snapshot.content_hash[:12]}…, "
                    f"the run was launched on {run.snapshot_hash[:12]}…"
                ),
            )
            return None
        return RunSpec(
            run_id=run.pk,
            attempt=run.celery_task_id,
            lease_id=run.lease_id,
            model=run.model,
            config=run.config,
            snapshot_id=snapshot.pk,
            snapshot_hash=run.snapshot_hash,
            restarts=run.results.get("restarts", 0),
            snapshot_directory=str(snapshot_files.local_snapshot_folder(snapshot) or ""),
        )

    def snapshot_folder(self, spec: RunSpec) -> str | Path:
        # The files where this host has them on disk (the local default's folder); otherwise fetched
        # from the snapshot storage into this host's cache, verified, as a GPU node fetches them.
        if spec.snapshot_directory:
            return spec.snapshot_directory
        snapshot = Snapshot.objects.get(pk=spec.snapshot_id)
        cache = SnapshotCache(settings.SNAPSHOT_CACHE_DIR, settings.SNAPSHOT_CACHE_MAX_BYTES)
        folder, report = cache.get(spec.snapshot_hash, functools.partial(_fetch_stored_file, snapshot))
        spec.snapshot_source = report
        return folder

    def snapshot_rejected(self, spec: RunSpec) -> None:
        if not spec.snapshot_directory:
            SnapshotCache(settings.SNAPSHOT_CACHE_DIR, settings.SNAPSHOT_CACHE_MAX_BYTES).discard(spec.snapshot_hash)

    def progress(self, spec: RunSpec, fields: Mapping[str, Any]) -> bool:
        return record_progress(spec.run_id, spec.attempt, spec.lease_id, fields)

    def save_checkpoint(self, spec: RunSpec, path: str | Path) -> bool:
        with open(path, "rb") as source:
            return store_checkpoint(spec.run_id, spec.attempt, spec.lease_id, source)

    def finish(self, spec: RunSpec, results: dict[str, Any]) -> bool:
        return finish_run(spec.run_id, spec.attempt, spec.lease_id, results)

    def fail(self, spec: RunSpec, error: object) -> bool:
        return fail_run(spec.run_id, spec.attempt, spec.lease_id, error)

    def status(self, run_id: int) -> str | None:
        return TrainingRun.objects.filter(pk=run_id).values_list("status", flat=True).first()


def _fetch_stored_file(snapshot: Snapshot, name: str, part_path: Path) -> int:
    """SnapshotCache's fetch: the whole file from the snapshot storage into `part_path`; the bytes copied."""
    with open(part_path, "wb") as part:
        return snapshot_files.copy_snapshot_file(snapshot, name, part)


def run_reporter() -> RunReporter:
    """The transport of this process: HTTP when it is a GPU node (PLATFORM_URL + NODE_TOKEN), else the database."""
    if settings.PLATFORM_URL and settings.NODE_TOKEN:
        from .remote import HttpReporter, PlatformClient

        cache = SnapshotCache(settings.SNAPSHOT_CACHE_DIR, settings.SNAPSHOT_CACHE_MAX_BYTES)
        return HttpReporter(PlatformClient(settings.PLATFORM_URL, settings.NODE_TOKEN), cache)
    return DatabaseReporter()


def execute_training_run(
    run_id: int,
    *,
    hostname: str | None = None,
    task_id: str | None = None,
    bar: "tqdm | None" = None,
    reporter: RunReporter | None = None,
) -> dict[str, Any]:
    """The node's side of a run (runner.execute_attempt) with this process's transport."""
    return execute_attempt(
        reporter or run_reporter(),
        run_id,
        hostname or f"in-process@{socket.gethostname()}",
        task_id,
        float(settings.TRAINING_HEARTBEAT_SECONDS),
        bar=bar,
        work_dir=Path(settings.DATA_DIR) / "work",
    )


def execute_packed_training_runs(
    run_ids: list[int],
    *,
    hostname: str | None = None,
    task_id: str | None = None,
    bars: list[Any] | None = None,
    reporter: RunReporter | None = None,
) -> list[dict[str, Any]]:
    """Runs of one model and shape trained together in this process (runner.execute_packed_attempts):
    each with its own progress on its run page, checkpoint and results."""
    return execute_packed_attempts(
        reporter or run_reporter(),
        run_ids,
        hostname or f"in-process@{socket.gethostname()}",
        task_id,
        float(settings.TRAINING_HEARTBEAT_SECONDS),
        bars=bars,
        work_dir=Path(settings.DATA_DIR) / "work",
    )


class CancelRefused(Exception):
    """A run that cannot be cancelled (unknown, or finished already); the message says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def cancel_training_run(run_id: int, *, user: User | AnonymousUser | None = None) -> TrainingRun:
    """Cancel a queued or running run; returns it. Refused (CancelRefused) for a finished one.

    The run ends at once as failed with "Cancelled by ..." (and `results["cancelled"]`): a queued
    run is never leased, a running one stops at its next heartbeat (RunAbandoned) and writes
    nothing more. No new status, so a cancelled run reads as failed everywhere, the reason in its error.
    """
    who = user.get_username() if user is not None else "a researcher"
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            raise CancelRefused(f"There is no training run {run_id}.")
        if run.status in (RunStatus.DONE, RunStatus.FAILED):
            raise CancelRefused(
                f"Training run {run.pk} has finished already ({run.status}); there is nothing to cancel."
            )
        was = run.status
        run.status = RunStatus.FAILED
        run.error = f"Cancelled by {who} while {was}."
        run.finished_at = timezone.now()
        run.results = {**(run.results or {}), "cancelled": {"by": who, "while": was}}
        run.save(update_fields=["status", "error", "finished_at", "results"])
        audit.record(
            "training.cancelled",
            actor=user,
            subject=run,
            team_id=Snapshot.objects.filter(pk=run.snapshot_id).values_list("team_id", flat=True).first(),
            before={"status": was},
            after={"status": RunStatus.FAILED},
        )
    return run


def fail_running_runs(error: str, *, hostname: str | None = None, task_id: str | None = None) -> int:
    """Fail runs still marked running for a Celery worker (or one task) that is going away."""
    runs = TrainingRun.objects.filter(status=RunStatus.RUNNING)
    if hostname:
        runs = runs.filter(node_hostname=hostname)
    if task_id:
        runs = runs.filter(celery_task_id=task_id)
    return runs.update(status=RunStatus.FAILED, error=error[:5000], finished_at=timezone.now())


def reap_stale_runs(*, minutes: float | None = None, requeue: bool = False) -> list[int]:
    """Fail (or requeue) running runs whose node stopped sending heartbeats; return their ids."""
    minutes = float(settings.TRAINING_STALE_MINUTES) if minutes is None else minutes
    cutoff = timezone.now() - timedelta(minutes=minutes)
    stale = (
        Q(heartbeat_at__lt=cutoff)
        | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
        | Q(heartbeat_at__isnull=True, started_at__isnull=True, created_at__lt=cutoff)
    )
    reaped: list[int] = []
    with transaction.atomic():
        for run in TrainingRun.objects.select_for_update().filter(Q(status=RunStatus.RUNNING) & stale):
            last = run.heartbeat_at or run.started_at
            lost = f"node lost: no heartbeat from {run.node_hostname or 'its node'} since {last:%Y-%m-%d %H:%M:%S} UTC"
            if requeue:
                run.status = RunStatus.QUEUED
                run.error = f"{lost}; requeued"
                run.results = {"restarts": int(run.results.get("restarts", 0)) + 1}
                run.celery_task_id = str(uuid.uuid4())
                run.save(update_fields=["status", "error", "results", "celery_task_id"])
                transaction.on_commit(functools.partial(_enqueue, run.pk, run.celery_task_id))
            else:
                run.status = RunStatus.FAILED
                run.error = lost
                run.finished_at = timezone.now()
                run.save(update_fields=["status", "error", "finished_at"])
            reaped.append(run.pk)
    return reaped


def record_run_tag_accuracy(run_id: int) -> dict[str, Any] | None:
    """Store a finished run's accuracy per phenomenon tag (MultiNLI Table 6: per tag, the share of
    pairs and the accuracy) in its results as `tag_accuracy`, where the run page and the run's API
    read it. Nothing is stored when the run has no per-pair predictions of tagged pairs."""
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update(of=("self",)).select_related("snapshot").filter(pk=run_id).first()
        if run is None or run.status != "done":
            return None
        figures = run_tag_accuracy(run)
        if figures is None:
            return None
        run.results = {**(run.results or {}), "tag_accuracy": figures}
        run.save(update_fields=["results"])
    return figures


def convert_stored_checkpoint(run_id: int) -> str:
    """Rewrite one run's stored checkpoint of the old format (torch.save) as safetensors; what happened, in words.

    A file checkpoint.convert_old_checkpoint refuses stays the run's (and unloadable). The converted
    file passes the upload's check before the run names it; the old one is deleted afterwards.
    """
    from django.core.files import File

    from .checkpoint import SUFFIX, CheckpointInvalid, check_checkpoint, convert_old_checkpoint
    from .storage import checkpoint_storage, local_path

    run = TrainingRun.objects.filter(pk=run_id).first()
    if run is None or not run.checkpoint_name:
        return "no stored checkpoint"
    storage = checkpoint_storage()
    old_name = run.checkpoint_name
    with tempfile.TemporaryDirectory(prefix=f"convert-run-{run_id}-") as scratch:
        old_path, new_path = Path(scratch) / "old", Path(scratch) / f"new{SUFFIX}"
        with storage.open(old_name, "rb") as source, open(old_path, "wb") as copy:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                copy.write(chunk)
        try:
            check_checkpoint(old_path)
            return "already safetensors"
        except CheckpointInvalid:
            pass
        try:
            convert_old_checkpoint(old_path, new_path)
        except CheckpointInvalid as invalid:
            return f"refused, left as it was: {invalid}"
        digest = hashlib.sha256(new_path.read_bytes()).hexdigest()
        with open(new_path, "rb") as converted:
            name = storage.save(f"run-{run_id}-converted-{digest[:12]}{SUFFIX}", File(converted))
    with transaction.atomic():
        locked = TrainingRun.objects.select_for_update().filter(pk=run_id, checkpoint_name=old_name).first()
        if locked is None:  # a node uploaded a new checkpoint meanwhile: keep that one
            storage.delete(name)
            return "skipped: the run's checkpoint changed while converting"
        locked.checkpoint_name = name
        locked.checkpoint_path = local_path(storage, name) or name
        locked.checkpoint_bytes = storage.size(name)
        locked.checkpoint_sha256 = digest
        locked.save(update_fields=["checkpoint_name", "checkpoint_path", "checkpoint_bytes", "checkpoint_sha256"])
    storage.delete(old_name)
    return "converted"
