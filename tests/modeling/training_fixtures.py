"""Snapshot folders written by the tests themselves, in the export's format, so the training
tests do not depend on the export code: <dir>/<split>.jsonl + manifest.json, and a done Snapshot row."""

import hashlib
import json
from pathlib import Path

from modeling.training.synthetic import synthetic_rows


def write_snapshot_files(directory, splits):
    """`splits`: {"train": [rows], "dev_matched": [rows], ...}; returns the content hash."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for split, rows in splits.items():
        name = f"{split}.jsonl"
        data = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows).encode()
        (directory / name).write_bytes(data)
        files.append(
            {
                "name": name,
                "split": split,
                "rows": len(rows),
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
        )
    files.sort(key=lambda f: f["name"])
    content_hash = hashlib.sha256("".join(f"{f['name']}\t{f['sha256']}\n" for f in files).encode()).hexdigest()
    manifest = {"files": files, "content_hash": content_hash}
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return content_hash


def make_snapshot(directory, splits, user=None):
    from base.long_tasks import JobStatus
    from modeling.models import Snapshot

    content_hash = write_snapshot_files(directory, splits)
    return Snapshot.objects.create(
        status=JobStatus.DONE,
        directory=str(directory),
        content_hash=content_hash,
        created_by=user,
        row_count=sum(len(rows) for rows in splits.values()),
    )


def learnable_rows(n, seed):
    """Rows whose label a model can learn from the pair: the hypothesis names its label's cue word."""
    rows = synthetic_rows(n, seed=seed, hypothesis_mean=4, premise_mean=6)
    cues = {"entailment": "indeed", "neutral": "perhaps", "contradiction": "never"}
    for row in rows:
        row["sentence2"] = f"{cues[row['gold_label']]} {row['sentence2']}"
    return rows


def multinli_splits(n_train=120, n_eval=30, seed=0):
    return {
        "train": learnable_rows(n_train, seed),
        "dev_matched": learnable_rows(n_eval, seed + 1),
        "dev_mismatched": learnable_rows(n_eval, seed + 2),
        "test_matched": learnable_rows(n_eval, seed + 3),
        "test_mismatched": learnable_rows(n_eval, seed + 4),
    }


def follow(run_id, timeout=180):
    """Poll the run's row until it ends; return it and every (status, epoch, step) seen on the way."""
    from modeling.models import RunStatus, TrainingRun
    from tests.conftest import wait_for

    seen = []

    def ended():
        run = TrainingRun.objects.get(pk=run_id)
        seen.append((run.status, run.epoch, run.step, len(run.history)))
        return run if run.status in (RunStatus.DONE, RunStatus.FAILED) else None

    return wait_for(ended, timeout=timeout, interval=0.1, message=f"run {run_id} to end"), seen
