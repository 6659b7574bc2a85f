"""Checks that only a failing test keeps honest: a majority-class
checkpoint must name one of its classes (the last is fine, one past it is not); a snapshot that
failed is never released, even with its folder on disk; and a release checks every file against
the manifest, so a file changed after the export stops it."""

from pathlib import Path

import pytest

from base.long_tasks import JobStatus
from corpus.models import Dataset, Label, Split
from modeling.models import Snapshot
from modeling.release import ReleaseError, make_release
from modeling.snapshots.services import create_snapshot, export_snapshot
from modeling.training.checkpoint import CheckpointInvalid, check_checkpoint, load_checkpoint, write_checkpoint
from tests.modeling.conftest import add_pair, add_premise, genre

LABELS = ("entailment", "neutral", "contradiction")


def majority_checkpoint(path, label):
    return write_checkpoint(
        path, model="majority", config={}, epoch=1, vocab=["<pad>", "<unk>"], labels=LABELS, state_dict={"label": label}
    )


@pytest.mark.parametrize("label", [0, len(LABELS) - 1])
def test_a_majority_checkpoint_of_any_of_its_classes_loads(tmp_path, label):
    path = majority_checkpoint(tmp_path / "m.safetensors", label)
    assert check_checkpoint(path).kind == "majority"
    assert load_checkpoint(path).predict("A man.", "A person.") == LABELS[label]


@pytest.mark.parametrize("label", [len(LABELS), -1])
def test_a_majority_checkpoint_whose_label_is_no_class_is_refused(tmp_path, label):
    path = majority_checkpoint(tmp_path / "m.safetensors", label)
    with pytest.raises(CheckpointInvalid, match=f"the majority label {label} is not one of the 3 classes"):
        check_checkpoint(path)
    with pytest.raises(CheckpointInvalid, match="is not one of the 3 classes"):
        load_checkpoint(path)


@pytest.fixture
def exported(db):
    dataset = Dataset.objects.create(slug="release-checks", name="Release checks")
    fiction = genre("fiction")
    for split in (Split.TRAIN, Split.DEV):
        for i in range(2):
            premise = add_premise(dataset, fiction, split, f"{split} premise {i}.")
            add_pair(dataset, premise, f"{split} hypothesis {i}.", [Label.ENTAILMENT.value], needs_validation=False)
    return export_snapshot(
        create_snapshot(None, datasets=["release-checks"], filters={"unvalidated_gold": "author-all"})
    )


def test_a_failed_snapshot_is_not_released_though_its_folder_is_there(exported, tmp_path):
    assert make_release(exported, tmp_path / "first")["files"]  # the folder is releasable as it is
    Snapshot.objects.filter(pk=exported.pk).update(status=JobStatus.FAILED)
    exported.refresh_from_db()
    with pytest.raises(ReleaseError, match="release a finished snapshot"):
        make_release(exported, tmp_path / "second")
    assert not (tmp_path / "second").exists()


def test_a_file_changed_after_the_export_stops_the_release(exported, tmp_path):
    folder = Path(exported.directory)
    changed = sorted(path for path in folder.iterdir() if path.suffix == ".jsonl")[0]
    changed.write_text(changed.read_text(encoding="utf-8").replace("hypothesis 0", "hypothesis X"), encoding="utf-8")
    with pytest.raises(ReleaseError, match=f"{changed.name} does not match its sha256"):
        make_release(exported, tmp_path / "out")
    assert not (tmp_path / "out").exists()
