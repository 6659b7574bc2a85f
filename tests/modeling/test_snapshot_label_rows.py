"""The label-level file of a snapshot: `labels.jsonl`, one row per label, annotators
pseudonymous and stable within the snapshot, hashed in the manifest, the same bytes every time."""

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from base.long_tasks import JobStatus
from corpus.exclusions import set_workers_excluded
from corpus.models import Dataset, Label, Split, ValidationLabel, Worker
from corpus.services import add_labels
from modeling.snapshots.format import LABELS_FILE, read_manifest, verify_snapshot
from modeling.snapshots.label_rows import LABEL_COLUMNS
from modeling.snapshots.services import create_snapshot, export_snapshot
from quality.models import CatchTrialAnswer
from teams.models import default_team_id
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
SECRET_IDS = ("PROLIFICFAST0001", "PROLIFICSLOW0002", "PROLIFICGONE0003")


@pytest.fixture
def labelled(make_worker):
    """Twelve dev pairs (author labels imported); a fast worker labels all twelve in 1 s each (the
    quality checks flag them: too fast), a careful one six in 20 s, a third one six and is then
    excluded. The careful worker answered a catch trial."""
    dataset = Dataset.objects.create(slug="rows", name="rows")
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, Split.DEV, f"A premise {i}."), f"Hypothesis {i}.", [E])
        for i in range(12)
    ]
    add_pair(dataset, add_premise(dataset, fiction, Split.TRAIN, "A train premise."), "Unvalidated.", [C])
    fast, careful, gone = (make_worker(market="prolific", external_id=secret) for secret in SECRET_IDS)
    add_labels([(pair, E) for pair in pairs], worker=fast, seconds=1.0)
    add_labels([(pair, N) for pair in pairs[:6]], worker=careful, seconds=20.0)
    add_labels([(pair, C) for pair in pairs[6:]], worker=gone, seconds=12.5)
    set_workers_excluded(Worker.objects.filter(pk=gone.pk), True, teams=[default_team_id()])
    CatchTrialAnswer.objects.create(
        worker=careful, pair=pairs[0], batch=uuid.uuid4(), label=E, expected=E, matched=True, seconds=9.0
    )
    return dataset, {"fast": fast, "careful": careful, "gone": gone}


def export(**filters):
    snapshot = export_snapshot(create_snapshot(None, datasets=["rows"], filters=filters))
    assert snapshot.status == JobStatus.DONE
    return Path(snapshot.directory)


def rows_of(folder):
    with open(folder / LABELS_FILE, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_every_label_is_a_row_with_a_pseudonym_its_time_exclusion_catch_and_flag_marks(labelled):
    dataset, workers = labelled
    folder = export(label_rows=True)
    rows = rows_of(folder)
    assert len(rows) == ValidationLabel.objects.filter(pair__dataset=dataset).count() == 1 + 12 + 12 + 6 + 6
    assert all(tuple(row) == LABEL_COLUMNS for row in rows)
    text = (folder / LABELS_FILE).read_text(encoding="utf-8")
    for worker in workers.values():  # never the market's id, never the platform's key
        assert worker.external_id not in text
    assert {row["annotator"] for row in rows if row["role"] == "author"} == {None}  # imported author labels
    by_annotator: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["annotator"] is not None:
            by_annotator.setdefault(row["annotator"], []).append(row)
    assert sorted(len(group) for group in by_annotator.values()) == [6, 6, 12]
    fast = next(group for group in by_annotator.values() if len(group) == 12)
    assert {(row["label"], row["seconds"], tuple(row["flags"]), row["excluded"], row["counted"]) for row in fast} == {
        (E, 1.0, ("too fast",), False, True)
    }
    careful = next(group for group in by_annotator.values() if group[0]["label"] == N)
    assert {(row["seconds"], row["catch_trials_seen"], row["catch_trials_matched"]) for row in careful} == {
        (20.0, 1, 1)
    }
    gone = next(group for group in by_annotator.values() if group[0]["label"] == C)
    assert {(row["excluded"], row["counted"], row["seconds"]) for row in gone} == {(True, False, 12.5)}
    assert {row["split"] for row in rows} == {"dev", "train"} and {row["rating"] for row in rows} == {None}


def test_the_label_file_is_hashed_in_the_manifest_and_the_same_bytes_every_export(labelled):
    from modeling.snapshots.format import training_files

    first, second = export(label_rows=True), export(label_rows=True)
    manifest = read_manifest(first)
    entry = next(entry for entry in manifest["files"] if entry["name"] == LABELS_FILE)
    assert entry["rows"] == 37 and entry["split"] == ""
    verify_snapshot(first, manifest["content_hash"])
    assert LABELS_FILE not in training_files(manifest)  # training reads pairs, not labels
    assert (first / LABELS_FILE).read_bytes() == (second / LABELS_FILE).read_bytes()
    assert manifest["filters"]["label_rows"] is True
    (first / LABELS_FILE).write_text("tampered\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"labels\.jsonl"):
        verify_snapshot(first, manifest["content_hash"])


def test_without_the_option_a_snapshot_has_no_label_file(labelled):
    folder = export()
    assert not (folder / LABELS_FILE).exists()
    assert LABELS_FILE not in {entry["name"] for entry in read_manifest(folder)["files"]}
    assert "label_rows" not in read_manifest(folder)["filters"]
