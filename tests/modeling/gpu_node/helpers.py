"""Snapshots served by the platform under test, and the follow-a-run helper."""

import json
from pathlib import Path

from django.conf import settings

from tests.conftest import wait_for
from tests.modeling.training_fixtures import learnable_rows, write_snapshot_files

SMALL = {
    "embedding_dim": 16,
    "hidden_dim": 16,
    "batch_size": 32,
    "lr": 0.01,
    "cpu_threads": 1,
    "epochs": 3,
    "patience": 3,
}


def learnable_splits(seed, n_train=600, n_eval=100):
    return {
        "train": learnable_rows(n_train, seed),
        "dev_matched": learnable_rows(n_eval, seed + 1),
        "dev_mismatched": learnable_rows(n_eval, seed + 2),
        "test_matched": learnable_rows(n_eval, seed + 3),
        "test_mismatched": learnable_rows(n_eval, seed + 4),
    }


def served_snapshot(splits, user=None, tsv=True):
    """A done snapshot whose files lie where the platform serves them (SNAPSHOT_DIR/<id>), as an export leaves them.

    With `tsv`, each split also has a .tsv twin in the manifest, which a GPU node never needs to fetch.
    """
    from base.long_tasks import JobStatus
    from modeling.models import Snapshot, SnapshotFile
    from modeling.snapshots.format import build_manifest, sha256_of_file, write_manifest

    snapshot = Snapshot.objects.create(status=JobStatus.PENDING, created_by=user)
    folder = Path(settings.SNAPSHOT_DIR) / str(snapshot.pk)
    write_snapshot_files(folder, splits)
    files = []
    for split, rows in splits.items():
        names = [f"{split}.jsonl"]
        if tsv:
            (folder / f"{split}.tsv").write_text(
                "".join(f"{r['gold_label']}\t{r['sentence1']}\t{r['sentence2']}\n" for r in rows)
            )
            names.append(f"{split}.tsv")
        for name in names:
            path = folder / name
            files.append(
                {
                    "name": name,
                    "split": split,
                    "rows": len(rows),
                    "bytes": path.stat().st_size,
                    "sha256": sha256_of_file(path),
                }
            )
    files.sort(key=lambda f: f["name"])
    rows = sum(len(r) for r in splits.values())
    manifest = build_manifest(snapshot.pk, [], {}, rows, files)
    write_manifest(folder, manifest)
    SnapshotFile.objects.bulk_create(SnapshotFile(snapshot=snapshot, **f) for f in files)
    Snapshot.objects.filter(pk=snapshot.pk).update(
        status=JobStatus.DONE, directory=str(folder), content_hash=manifest["content_hash"], row_count=rows
    )
    snapshot.refresh_from_db()
    return snapshot


def manifest_of(snapshot):
    return json.loads((Path(snapshot.directory) / "manifest.json").read_text())


def follow(run_id, timeout=180):
    from modeling.models import RunStatus, TrainingRun

    def ended():
        run = TrainingRun.objects.get(pk=run_id)
        return run if run.status in (RunStatus.DONE, RunStatus.FAILED) else None

    return wait_for(ended, timeout=timeout, interval=0.2, message=f"run {run_id} to end")


def worker_client(name="node-a"):
    """An API client holding a new node token (the `Worker` scheme, its old name)."""
    from rest_framework.test import APIClient

    from modeling.models import NodeToken

    _, key = NodeToken.issue(name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Worker {key}")
    return client


def checkpoint_bytes(tmp_path, model="cbow"):
    """A small checkpoint in the format runs write (safetensors with JSON metadata)."""
    from modeling.nets import build_net
    from modeling.training.checkpoint import write_checkpoint

    net = build_net(model, 30, num_classes=3, embedding_dim=4, hidden_dim=4)
    if model == "majority":
        net.label = 0
    return write_checkpoint(
        tmp_path / f"small-{model}.safetensors",
        model=model,
        config={"embedding_dim": 4, "hidden_dim": 4},
        epoch=1,
        vocab=[f"w{i}" for i in range(30)],
        labels=["entailment", "neutral", "contradiction"],
        state_dict=net.state_dict(),
    ).read_bytes()


def trainers_labels_and_vocabulary(run):
    """(labels, vocabulary) the trainer gives a run (modeling.training.loop.train): the snapshot's
    label scheme, and Vocab.build over the train pairs select_train keeps. Read the trainer's way,
    from a copy of the snapshot's files, so a test never derives them as the platform's check does."""
    import tempfile

    from modeling.snapshots.files import copy_snapshot_files
    from modeling.training.data import Vocab, load_snapshot
    from modeling.training.loop import select_train

    with tempfile.TemporaryDirectory() as scratch:
        data = load_snapshot(copy_snapshot_files(run.snapshot, scratch))
    primary, secondary = select_train(data.train, run.config)
    return list(data.labels), Vocab.build(primary + secondary).itos


def run_checkpoint_bytes(tmp_path, run, *, labels=None, vocab=None):
    """A checkpoint of the run's net with the run's labels and vocabulary (either replaced when given)."""
    from modeling.nets import build_net
    from modeling.training.checkpoint import write_checkpoint

    run_labels, run_vocab = trainers_labels_and_vocabulary(run)
    labels, vocab = labels or run_labels, vocab or run_vocab
    hyper = {"embedding_dim": 4, "hidden_dim": 4}
    net = build_net(run.model, len(vocab), num_classes=len(labels), **hyper)
    state = {"label": 0} if run.model == "majority" else net.state_dict()
    return write_checkpoint(
        tmp_path / f"run-{run.pk}-{len(labels)}-{len(vocab)}.safetensors",
        model=run.model,
        config=hyper,
        epoch=1,
        vocab=vocab,
        labels=labels,
        state_dict=state,
    ).read_bytes()
