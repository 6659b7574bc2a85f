"""A checkpoint is stored only when it is its run's: the labels of the run's snapshot, in
class order, and the vocabulary the trainer builds from the snapshot's train pairs. Checked on both
paths: a GPU node's upload over the node API, and a Celery worker storing its own checkpoint."""

import io
import json
from pathlib import Path

import pytest

from modeling.models import RunStatus, TrainingRun
from modeling.training.run_writes import CheckpointRejected, lease_run, store_checkpoint
from modeling.training.services import DatabaseReporter, execute_training_run, launch_training_run
from tests.present import present

from .helpers import SMALL, learnable_splits, run_checkpoint_bytes, served_snapshot, trainers_labels_and_vocabulary
from .test_node_api import lease, upload


def nothing_stored(settings, run_id):
    run = TrainingRun.objects.get(pk=run_id)
    folder = Path(settings.CHECKPOINT_DIR)
    return not run.checkpoint_name and not run.checkpoint_sha256 and (not folder.exists() or not any(folder.iterdir()))


@pytest.mark.parametrize(
    "forged, message",
    [
        ("two-way labels", "the checkpoint's labels are entailed, not-entailed"),
        ("yes/no/maybe", "the checkpoint's labels are yes, no, maybe"),
        ("the labels in another order", "the checkpoint's labels are contradiction, neutral, entailment"),
        ("other words", "is not the one the run's training pairs give"),
        ("one word more", "is not the one the run's training pairs give"),
    ],
)
def test_a_node_upload_with_labels_or_vocabulary_not_the_runs_is_a_400_and_nothing_is_stored(
    node, queued_run, tmp_path, settings, forged, message
):
    spec = lease(node, queued_run).json()
    labels, vocab = trainers_labels_and_vocabulary(queued_run)
    changed = {
        "two-way labels": {"labels": ["entailed", "not-entailed"]},
        "yes/no/maybe": {"labels": ["yes", "no", "maybe"]},
        "the labels in another order": {"labels": labels[::-1]},
        "other words": {"vocab": vocab[:2] + [f"w{i}" for i in range(len(vocab) - 2)]},
        "one word more": {"vocab": [*vocab, "zebra"]},
    }[forged]

    refused = upload(node, queued_run, spec["claim"], run_checkpoint_bytes(tmp_path, queued_run, **changed))

    assert refused.status_code == 400, refused.content
    detail = refused.json()["detail"]
    assert f"not run {queued_run.pk}'s checkpoint" in detail and message in detail
    assert nothing_stored(settings, queued_run.pk)
    assert TrainingRun.objects.get(pk=queued_run.pk).status == RunStatus.RUNNING


def test_the_runs_own_checkpoint_is_stored(node, queued_run, tmp_path):
    spec = lease(node, queued_run).json()
    assert upload(node, queued_run, spec["claim"], run_checkpoint_bytes(tmp_path, queued_run)).status_code == 201


def test_a_two_way_runs_checkpoint_must_be_two_way(node, db, researcher, tmp_path, settings):
    splits = learnable_splits(3, n_train=30, n_eval=6)
    for rows in splits.values():
        for row in rows:
            row["gold_label"] = "entailed" if row["gold_label"] == "entailment" else "not-entailed"
    snapshot = served_snapshot(splits, researcher)
    manifest_path = Path(snapshot.directory) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["label_scheme"] = "two_way"
    manifest_path.write_text(json.dumps(manifest))
    run = launch_training_run(snapshot, "cbow", config=SMALL, enqueue=False)
    spec = lease(node, run).json()

    three_way = upload(
        node, run, spec["claim"], run_checkpoint_bytes(tmp_path, run, labels=["entailment", "neutral", "contradiction"])
    )
    assert (
        three_way.status_code == 400
        and "the run's snapshot labels its pairs entailed, not-entailed" in three_way.json()["detail"]
    )
    assert nothing_stored(settings, run.pk)
    assert upload(node, run, spec["claim"], run_checkpoint_bytes(tmp_path, run)).status_code == 201


def test_a_worker_storing_its_own_checkpoint_is_checked_the_same_way(queued_run, tmp_path, settings):
    held = present(lease_run(queued_run.pk, "gpu@worker", queued_run.celery_task_id))
    forged = tmp_path / "forged.safetensors"
    forged.write_bytes(run_checkpoint_bytes(tmp_path, queued_run, labels=["entailed", "not-entailed"]))
    spec = present(DatabaseReporter().lease(queued_run.pk, "gpu@worker", held.celery_task_id))

    with pytest.raises(CheckpointRejected, match="the checkpoint's labels are entailed, not-entailed"):
        DatabaseReporter().save_checkpoint(spec, forged)
    with pytest.raises(CheckpointRejected, match="is not the one the run's training pairs give"):
        store_checkpoint(
            spec.run_id,
            spec.attempt,
            spec.lease_id,
            io.BytesIO(run_checkpoint_bytes(tmp_path, queued_run, vocab=["<pad>", "<unk>", "a", "b"])),
        )
    assert nothing_stored(settings, queued_run.pk)


def test_a_run_trained_in_process_on_one_genre_stores_its_checkpoint(db, researcher, settings):
    """The platform's check derives the vocabulary as the trainer does, genre filter included: a real
    training run (the trainer writing the checkpoint) passes it."""
    splits = learnable_splits(4, n_train=60, n_eval=10)
    for index, row in enumerate(splits["train"]):
        row["genre"] = "fiction" if index % 2 else "travel"
    snapshot = served_snapshot(splits, researcher)
    run = launch_training_run(snapshot, "cbow", config={**SMALL, "epochs": 1}, enqueue=False)
    TrainingRun.objects.filter(pk=run.pk).update(config={**run.config, "train_genre": "fiction"})

    outcome = execute_training_run(run.pk, reporter=DatabaseReporter())

    run.refresh_from_db()
    assert outcome["status"] == "done", run.error
    assert run.status == RunStatus.DONE and run.checkpoint_sha256
    whole_vocab = trainers_labels_and_vocabulary(TrainingRun(snapshot=snapshot, config=SMALL, model="cbow"))[1]
    fiction_vocab = trainers_labels_and_vocabulary(run)[1]
    assert fiction_vocab != whole_vocab  # the genre filter mattered to the vocabulary (words or their order)
