"""The run's writes, for both transports: the database reporter (this process) and the node API
(a GPU node's HTTP requests, modeling/api/node.py) call the same functions, so one set of rules holds:
only the lease that holds the run may write it (lease, progress, checkpoint, results, failure).
"""

import hashlib
import json
import logging
import tempfile
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from base.task_queue import enqueue
from modeling.models import NodeToken, RunStatus, SnapshotFile, TrainingRun
from modeling.snapshots.format import EVALUATION_SPLITS, TRAIN_FILE

from .results_check import node_results_problems

if TYPE_CHECKING:
    from _typeshed import SupportsRead


# Adds accuracy per phenomenon tag (the artifacts app's figures) to a finished run's results.
RUN_FINISHED_TASK = "modeling.tasks.record_run_tag_accuracy"

logger = logging.getLogger(__name__)


class CheckpointRejected(ValueError):
    """An uploaded checkpoint refused: its bytes do not match the SHA-256 the node announced, or
    it is not a checkpoint that loads (modeling.training.checkpoint.check_checkpoint says why)."""


class FinishRefused(ValueError):
    """A node's results refused: the run has no checkpoint that passed the check, or the results
    hold what the trainer never reports (results_check names each problem)."""


def lease_run(
    run_id: int, hostname: str, task_id: str | None, *, node_token: NodeToken | None = None
) -> TrainingRun | None:
    """Mark the run running for this attempt under a new lease id; None when there is nothing (more) to do."""
    with transaction.atomic():
        run = TrainingRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            logger.warning("training run %s does not exist", run_id)
            return None
        if run.status in (RunStatus.DONE, RunStatus.FAILED):
            return None
        if node_token is not None and not run_known_to_node(run, node_token):
            # A run is its leaseholder's: another node token that knows the attempt takes nothing
            # over; a lost node's run comes back through the reaper or its own token.
            logger.warning("run %s: a lease by node %s of a run another holds; refused", run_id, node_token.pk)
            return None
        if node_token is not None and (not task_id or task_id != run.celery_task_id):
            # A node names the attempt its broker message carried. Without this, an empty or
            # invented attempt let any node token take over a run another node leases.
            logger.warning("run %s: a lease by node %s without the run's attempt; refused", run_id, node_token.pk)
            return None
        if task_id and run.celery_task_id and task_id != run.celery_task_id:
            # A message from an earlier attempt (the reaper requeued the run under a new id).
            logger.warning("run %s belongs to task %s, not %s; skipped", run_id, run.celery_task_id, task_id)
            return None
        restarts = int(run.results.get("restarts", 0)) + (1 if run.status == RunStatus.RUNNING else 0)
        now = timezone.now()
        if restarts > int(settings.TRAINING_MAX_RESTARTS):
            run.status = RunStatus.FAILED
            run.error = f"node lost {restarts} times (last on {run.node_hostname}); not retrying"
            run.finished_at = now
            run.save(update_fields=["status", "error", "finished_at"])
            return None
        run.status = RunStatus.RUNNING
        run.error = ""
        run.node_hostname = hostname[:200]
        run.node_token = node_token
        # A redelivered message keeps its task id; the new lease id is what stops the node it replaces.
        run.lease_id = uuid.uuid4().hex
        if not run.celery_task_id:
            run.celery_task_id = task_id or str(uuid.uuid4())
        run.started_at = now
        run.heartbeat_at = now
        run.finished_at = None
        run.epoch = run.step = 0
        run.loss = run.dev_accuracy = None
        run.history = []
        run.results = {"restarts": restarts} if restarts else {}
        run.save()
        return run


def run_known_to_node(run: TrainingRun, node_token: NodeToken) -> bool:
    """Whether a node token may know of this run at all: a queued run (any node that was handed its
    attempt may lease it), or one this token leased. To any other token a run that is running or
    ended under another holder answers as a run that does not exist (the node API's 404)."""
    return run.status == RunStatus.QUEUED or run.node_token_id == node_token.pk


def _held(
    run_id: int, attempt: str, lease_id: str | None, node_token: NodeToken | None = None
) -> QuerySet[TrainingRun]:
    """The run, as a queryset, while this attempt's lease holds it (empty otherwise)."""
    runs = TrainingRun.objects.filter(pk=run_id, status=RunStatus.RUNNING, celery_task_id=attempt)
    if lease_id is not None:
        runs = runs.filter(lease_id=lease_id)
    if node_token is not None:
        runs = runs.filter(node_token=node_token)
    return runs


PROGRESS_FIELDS = ("epoch", "total_epochs", "step", "total_steps", "loss", "dev_accuracy", "history", "device")


def record_progress(
    run_id: int, attempt: str, lease_id: str | None, fields: Mapping[str, Any], *, node_token: NodeToken | None = None
) -> bool:
    """A heartbeat: write the run's progress; False when the lease no longer holds the run."""
    values = {key: fields[key] for key in PROGRESS_FIELDS if key in fields}
    return bool(_held(run_id, attempt, lease_id, node_token).update(**values, heartbeat_at=timezone.now()))


# The run's vocabulary takes a pass over its training pairs; each (snapshot, label set, genre) is
# read once and its digest kept, so a takeover's second upload or a sibling run costs nothing.
RUN_VOCABULARY_CACHE_SECONDS = 7 * 24 * 3600


def run_labels_and_vocabulary(run: TrainingRun) -> tuple[tuple[str, ...], str]:
    """(labels in class order, SHA-256 of the vocabulary) a checkpoint of this run must have: the
    snapshot's label scheme (its manifest, as training reads it) and the vocabulary the trainer
    builds from the snapshot's train.jsonl (checkpoint.run_vocabulary). CheckpointRejected when
    this host cannot read the snapshot, so an unchecked checkpoint is never stored."""
    from django.core.cache import cache

    from modeling.snapshots.files import open_snapshot_file, read_manifest_of
    from modeling.snapshots.format import SnapshotError, manifest_labels

    from .checkpoint import run_vocabulary, vocabulary_digest

    snapshot = run.snapshot
    try:
        labels = manifest_labels(read_manifest_of(snapshot))
    except SnapshotError as error:
        raise CheckpointRejected(f"the checkpoint cannot be checked against its run here: {error}") from None
    genre = run.config.get("train_genre") or ""
    key = f"run-vocabulary:{run.snapshot_hash}:{hashlib.sha256(json.dumps([labels, genre]).encode()).hexdigest()}"
    digest = cache.get(key)
    if digest is None:
        handle = open_snapshot_file(snapshot, TRAIN_FILE)
        if handle is None:
            raise CheckpointRejected(
                f"the checkpoint cannot be checked against its run here: snapshot {snapshot.pk}'s {TRAIN_FILE} "
                "is not in the snapshot storage"
            )
        with handle:
            digest = vocabulary_digest(run_vocabulary(handle, labels, run.config))
        cache.set(key, digest, RUN_VOCABULARY_CACHE_SECONDS)
    return labels, digest


def store_checkpoint(
    run_id: int,
    attempt: str,
    lease_id: str | None,
    source: "SupportsRead[bytes]",
    *,
    sha256: str | None = None,
    node_token: NodeToken | None = None,
) -> bool:
    """Put a finished checkpoint (a readable binary file) into the checkpoint storage and record it.

    The stored name is new for each lease, so a takeover never overwrites a file being downloaded.
    False (nothing kept) when the lease no longer holds the run; CheckpointRejected (nothing kept)
    when the bytes do not match `sha256` or are not this run's checkpoint: checked as data, never
    unpickled, before the run can finish on it.
    """
    from django.core.files import File

    from .checkpoint import SUFFIX, CheckpointInvalid, check_checkpoint, mismatch_with_run
    from .storage import checkpoint_storage, local_path

    held = _held(run_id, attempt, lease_id, node_token).select_related("snapshot").first()
    if held is None:
        return False
    model = held.model
    digest, size = hashlib.sha256(), 0
    with tempfile.NamedTemporaryFile(suffix=SUFFIX) as spool:
        for chunk in iter(lambda: source.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
            spool.write(chunk)
        if sha256 and digest.hexdigest() != sha256:
            raise CheckpointRejected(
                f"the checkpoint's bytes have sha256 {digest.hexdigest()[:12]}…, the node announced {sha256[:12]}…; "
                "it was damaged in transit, send it again"
            )
        spool.flush()
        try:
            info = check_checkpoint(spool.name)
        except CheckpointInvalid as invalid:
            raise CheckpointRejected(f"the upload is not a checkpoint this platform loads: {invalid}") from None
        if info.kind != model:
            raise CheckpointRejected(f"the upload is a {info.kind} checkpoint; run {run_id} trains {model}")
        labels, vocabulary_sha256 = run_labels_and_vocabulary(held)
        mismatch = mismatch_with_run(info, labels, vocabulary_sha256)
        if mismatch:
            raise CheckpointRejected(f"the upload is not run {run_id}'s checkpoint: {mismatch}")
        spool.seek(0)
        storage = checkpoint_storage()
        name = storage.save(f"run-{run_id}-{lease_id[:12] if lease_id else uuid.uuid4().hex[:12]}{SUFFIX}", File(spool))
    with transaction.atomic():
        run = _held(run_id, attempt, lease_id, node_token).select_for_update().first()
        if run is None:
            storage.delete(name)
            return False
        previous = run.checkpoint_name
        run.checkpoint_name = name
        run.checkpoint_path = local_path(storage, name) or name
        run.checkpoint_bytes = size
        run.checkpoint_sha256 = digest.hexdigest()
        run.save(update_fields=["checkpoint_name", "checkpoint_path", "checkpoint_bytes", "checkpoint_sha256"])
    if previous and previous != name:
        storage.delete(previous)
    return True


def finish_run(
    run_id: int, attempt: str, lease_id: str | None, results: dict[str, Any], *, node_token: NodeToken | None = None
) -> bool:
    """Record a run's results (it is done); False when the lease no longer holds the run.

    A node's run (`node_token`) finishes only on a checkpoint that passed store_checkpoint's check
    (FinishRefused otherwise). The progress becomes what really ran: a run stopped early reads
    "step 400/400", not "step 400/1000" of a plan it did not finish.
    """
    now = timezone.now()
    dev_split = results.get("dev_split")
    accuracy = results.get("accuracy") or {}
    ran: dict[str, Any] = {"total_steps": F("step")}
    if "epochs_run" in results:
        ran.update(epoch=results["epochs_run"], total_epochs=results["epochs_run"])
    dev_accuracy = accuracy.get(dev_split) if dev_split else None
    if node_token is not None:
        held = _held(run_id, attempt, lease_id, node_token).values_list("checkpoint_sha256", "snapshot_id").first()
        if held is None:
            return False
        problems = node_results_problems(results, split_rows=evaluation_rows(held[1]))
        if problems:
            raise FinishRefused(f"run {run_id}'s results were refused: {'; '.join(problems[:10])}")
        if not held[0]:
            raise FinishRefused(
                f"run {run_id} has no checkpoint that passed the check; upload it (PUT .../checkpoint/) before the results"
            )
        # The node's figures are its claim until the platform scores the checkpoint (remeasure.py).
        measured: dict[str, Any] = {"remeasured_accuracy": None, "remeasured_split": "", "remeasured_at": None}
    else:
        # This process trained the run and scored it on the dev split itself: its figure is the platform's.
        measured = {"remeasured_accuracy": dev_accuracy, "remeasured_split": dev_split or "", "remeasured_at": now}
    finished = bool(
        _held(run_id, attempt, lease_id, node_token).update(
            status=RunStatus.DONE,
            error="",
            finished_at=now,
            heartbeat_at=now,
            results=results,
            dev_accuracy=dev_accuracy,
            remeasure_error="",
            **measured,
            **ran,
        )
    )
    if finished:
        # The platform's own score of a node's checkpoint, then accuracy per phenomenon tag
        # (artifacts.selectors.run_tag_accuracy), join the run.
        transaction.on_commit(lambda: enqueue(RUN_FINISHED_TASK, run_id))
    return finished


def evaluation_rows(snapshot_id: int) -> dict[str, int] | None:
    """Rows per evaluation split file of the snapshot (None when its files were not recorded)."""
    names = {f"{split}.jsonl": split for split in EVALUATION_SPLITS}
    rows = dict(SnapshotFile.objects.filter(snapshot_id=snapshot_id, name__in=names).values_list("name", "rows"))
    return {names[name]: count for name, count in rows.items()} or None


def fail_run(
    run_id: int, attempt: str, lease_id: str | None, error: object, *, node_token: NodeToken | None = None
) -> bool:
    """Record a run's failure; False when the lease no longer holds the run (a reaped or taken-over run stays)."""
    now = timezone.now()
    return bool(
        _held(run_id, attempt, lease_id, node_token).update(
            status=RunStatus.FAILED,
            error=str(error)[:5000],
            finished_at=now,
            heartbeat_at=now,
        )
    )
