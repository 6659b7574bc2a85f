"""The platform scores a finished run's checkpoint itself, on its snapshot's own dev split.

A GPU node is untrusted: the accuracy it reports is a claim. Once a node's run is done, the
default queue loads the stored checkpoint as data, predicts the snapshot's dev file and keeps the
accuracy beside the node's in `TrainingRun.remeasured_accuracy`; model annotators use only runs the
platform scored (modeling.training.selectors.runs_fit_to_label).
"""

import hashlib
import json
import logging
from collections.abc import Iterator

from django.db import transaction
from django.utils import timezone

from modeling.models import RunStatus, TrainingRun
from modeling.snapshots.files import open_snapshot_file, read_manifest_of
from modeling.snapshots.format import SnapshotError, manifest_labels

logger = logging.getLogger(__name__)

# The dev split first (what the node reports as its dev accuracy); a snapshot without one is
# measured on its test split, which it names.
MEASURED_SPLITS = ("dev_matched", "dev", "test_matched", "test")
PAIRS_PER_BATCH = 512


class RemeasureImpossible(Exception):
    """The platform cannot score this run's checkpoint; the message says why."""


def _checkpoint_bytes(run: TrainingRun) -> bytes:
    from .storage import read_checkpoint

    data = read_checkpoint(run)
    if hashlib.sha256(data).hexdigest() != run.checkpoint_sha256:
        raise RemeasureImpossible("the stored checkpoint's SHA-256 is not the one the run recorded")
    return data


def _gold_pairs(run: TrainingRun, split: str, labels: tuple[str, ...]) -> Iterator[tuple[str, str, str]]:
    """(premise, hypothesis, gold label) of every pair of the split that has a gold label."""
    handle = open_snapshot_file(run.snapshot, f"{split}.jsonl")
    if handle is None:
        return
    with handle:
        for line in handle:
            if not line.strip():
                continue
            row = json.loads(line)
            gold = row.get("gold_label") if isinstance(row, dict) else None
            if gold in labels:
                yield str(row.get("sentence1", "")), str(row.get("sentence2", "")), gold


def score_checkpoint(run: TrainingRun) -> tuple[str, float]:
    """(the split measured, the checkpoint's accuracy on it); RemeasureImpossible when it cannot be."""
    from .checkpoint import CheckpointInvalid, load_checkpoint

    try:
        labels = tuple(manifest_labels(read_manifest_of(run.snapshot)))
    except SnapshotError as error:
        raise RemeasureImpossible(f"the snapshot cannot be read here: {error}") from None
    try:
        model = load_checkpoint(_checkpoint_bytes(run))
    except CheckpointInvalid as invalid:
        raise RemeasureImpossible(f"the checkpoint does not load: {invalid}") from None
    if tuple(model.labels) != labels:
        raise RemeasureImpossible(f"the checkpoint's labels {list(model.labels)} are not the snapshot's {list(labels)}")
    for split in MEASURED_SPLITS:
        correct = total = 0
        batch: list[tuple[str, str, str]] = []
        for pair in _gold_pairs(run, split, labels):
            batch.append(pair)
            if len(batch) == PAIRS_PER_BATCH:
                correct += _hits(model, batch)
                total += len(batch)
                batch = []
        if batch:
            correct += _hits(model, batch)
            total += len(batch)
        if total:
            return split, round(correct / total, 6)
    raise RemeasureImpossible(f"the snapshot has no labelled pairs in {', '.join(MEASURED_SPLITS)} to measure on")


def _hits(model: object, batch: list[tuple[str, str, str]]) -> int:
    predicted = model.predict_many([(premise, hypothesis) for premise, hypothesis, _ in batch])  # type: ignore[attr-defined]
    return sum(1 for word, (_, _, gold) in zip(predicted, batch, strict=True) if word == gold)


def remeasure_run(run_id: int) -> float | None:
    """Score a done run's checkpoint and keep the figure (or why it could not be had); the accuracy, or None.
    Only a done, unmeasured run with a checkpoint is scored, and kept while it still names that checkpoint."""
    run = TrainingRun.objects.select_related("snapshot").filter(pk=run_id, status=RunStatus.DONE).first()
    if run is None or not run.checkpoint_name or run.remeasured_accuracy is not None:
        return None
    scored = TrainingRun.objects.filter(pk=run_id, checkpoint_sha256=run.checkpoint_sha256, status=RunStatus.DONE)
    try:
        split, accuracy = score_checkpoint(run)
    except (RemeasureImpossible, OSError, ValueError) as error:
        logger.warning("run %s: the checkpoint could not be re-measured: %s", run_id, error)
        with transaction.atomic():
            scored.update(remeasure_error=str(error)[:2000], remeasured_at=timezone.now())
        return None
    with transaction.atomic():
        scored.update(
            remeasured_accuracy=accuracy, remeasured_split=split, remeasured_at=timezone.now(), remeasure_error=""
        )
    return accuracy
