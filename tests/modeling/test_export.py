"""Snapshots: MultiNLI-format files, byte-identical re-exports, all-or-nothing failures."""

import csv
import hashlib
import json
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone

from base.long_tasks import JobStatus
from corpus.models import Dataset, Label, Pair
from modeling.models import Snapshot, SnapshotFile
from modeling.snapshots.format import JSONL_KEYS, TSV_COLUMNS, read_manifest
from modeling.snapshots.services import (
    ExportRefused,
    create_snapshot,
    export_snapshot,
)
from modeling.snapshots.tasks import export_snapshot_task
from tests.conftest import shared_file
from tests.modeling.conftest import FIVE_E, add_pair, genre
from tests.present import present

pytestmark = pytest.mark.django_db


def read_jsonl(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def exported(snapshot, name):
    return Path(snapshot.directory) / name


def test_files_per_split_with_matched_and_mismatched(small_corpus):
    snapshot = export_snapshot(create_snapshot(None))
    assert snapshot.status == JobStatus.DONE and snapshot.progress == 1.0
    names = sorted(p.name for p in Path(snapshot.directory).iterdir())
    # 'mini' has a held-out genre: matched/mismatched; 'captions-only' has none: plain dev/test.
    assert names == sorted(
        [
            f"{split}.{ext}"
            for split in ["train", "dev", "test", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"]
            for ext in ["jsonl", "tsv"]
        ]
        + ["manifest.json"]
    )
    rows = {
        name: read_jsonl(exported(snapshot, f"{name}.jsonl"))
        for name in ["train", "dev", "test", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"]
    }
    assert [
        len(rows[n])
        for n in ["train", "dev", "test", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched"]
    ] == [3, 2, 1, 2, 2, 1, 1]
    assert {r["genre"] for r in rows["dev_mismatched"]} == {"letters"}
    assert {r["genre"] for r in rows["dev_matched"]} == {"fiction"}
    assert {r["genre"] for r in rows["dev"]} == {"captions"}
    assert {r["dataset"] for r in rows["dev"]} == {"captions-only"}
    assert {r["dataset"] for r in rows["train"]} == {"mini"}
    assert snapshot.row_count == 12
    assert SnapshotFile.objects.filter(snapshot=snapshot).count() == 14


def test_jsonl_fields_order_labels_and_gold(small_corpus):
    snapshot = export_snapshot(create_snapshot(None, datasets=["mini"]))
    train = read_jsonl(exported(snapshot, "train.jsonl"))
    assert all(tuple(row) == JSONL_KEYS for row in train)
    unvalidated, five_c, split_vote = train
    # A train pair never sent to validation keeps its author's label as gold (SNLI/MultiNLI convention).
    assert unvalidated["annotator_labels"] == ["entailment"] and unvalidated["gold_label"] == "entailment"
    assert five_c["annotator_labels"] == ["contradiction", "contradiction", "neutral", "contradiction", "contradiction"]
    assert five_c["gold_label"] == "contradiction"
    assert split_vote["gold_label"] == "-"
    assert unvalidated["sentence1"] == 'He said "stop"\tand\tleft.'
    assert unvalidated["sentence1_parse"] == "" and unvalidated["promptID"]
    # With unvalidated_gold "-", that pair has no gold label.
    strict = export_snapshot(create_snapshot(None, datasets=["mini"], filters={"unvalidated_gold": "-"}))
    assert read_jsonl(exported(strict, "train.jsonl"))[0]["gold_label"] == "-"


def test_pandas_reads_both_formats_back_unchanged(small_corpus):
    snapshot = export_snapshot(create_snapshot(None))
    pairs = {p.pair_id: p for p in Pair.objects.select_related("premise")}
    for split in ["train", "dev", "dev_matched", "dev_mismatched", "test", "test_matched", "test_mismatched"]:
        expected = read_jsonl(exported(snapshot, f"{split}.jsonl"))
        frame = pd.read_json(exported(snapshot, f"{split}.jsonl"), lines=True, dtype=False)
        assert frame.to_dict("records") == expected
        tsv = pd.read_csv(exported(snapshot, f"{split}.tsv"), sep="\t", keep_default_na=False, dtype=str)
        assert list(tsv.columns) == list(TSV_COLUMNS)
        assert len(tsv) == len(expected)
        for row, record in zip(tsv.to_dict("records"), expected, strict=False):
            pair = pairs[record["pairID"]]
            assert row["sentence1"] == pair.premise.text == record["sentence1"]
            assert row["sentence2"] == pair.hypothesis == record["sentence2"]
            assert row["gold_label"] == record["gold_label"]
            labels = [row[f"label{i}"] for i in range(1, 6)]
            assert [label for label in labels if label] == record["annotator_labels"]
            assert row["promptID"] == record["promptID"] and row["genre"] == record["genre"]
    # The tricky sentences really are in there.
    texts = set(pd.read_csv(exported(snapshot, "train.tsv"), sep="\t", keep_default_na=False)["sentence1"])
    assert 'He said "stop"\tand\tleft.' in texts
    dev = pd.read_csv(exported(snapshot, "dev_mismatched.tsv"), sep="\t", keep_default_na=False, dtype=str)
    assert "Dear donor,\r\nthank you." in set(dev["sentence1"])
    assert '"quoted" start and end "' in set(dev["sentence2"])
    # Python's csv module reads the same rows.
    with open(exported(snapshot, "train.tsv"), newline="", encoding="utf-8") as handle:
        assert [r["sentence2"] for r in csv.DictReader(handle, delimiter="\t")][2] == "He may come back,\nlater."


def test_manifest_hashes_match_files_and_content_hash_is_reproducible(small_corpus):
    first = export_snapshot(create_snapshot(None))
    second = export_snapshot(create_snapshot(None))
    assert first.content_hash == second.content_hash and len(first.content_hash) == 64
    manifest = read_manifest(first.directory)
    assert manifest["content_hash"] == first.content_hash and manifest["rows"] == 12
    for entry in manifest["files"]:
        data = exported(first, entry["name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] and len(data) == entry["bytes"]
        assert data == exported(second, entry["name"]).read_bytes()
        path = exported(first, entry["name"])
        if entry["name"].endswith(".jsonl"):
            assert entry["rows"] == len(read_jsonl(path))
        else:
            assert entry["rows"] == len(pd.read_csv(path, sep="\t", keep_default_na=False, dtype=str))
    db_files = {f.name: f.sha256 for f in first.files.all()}
    assert db_files == {e["name"]: e["sha256"] for e in manifest["files"]}
    # Changing the data changes the hash.
    Pair.objects.filter(pair_id="123.jpg#0r1e").update(hypothesis="Animals sprint.")
    third = export_snapshot(create_snapshot(None))
    assert third.content_hash != first.content_hash


def test_filters_select_genres_splits_and_gold(small_corpus):
    snapshot = export_snapshot(create_snapshot(None, datasets=["mini"], filters={"splits": ["dev"], "gold_only": True}))
    names = {f.name for f in snapshot.files.all()}
    assert names == {"dev_matched.jsonl", "dev_matched.tsv", "dev_mismatched.jsonl", "dev_mismatched.tsv"}
    rows = read_jsonl(exported(snapshot, "dev_matched.jsonl")) + read_jsonl(exported(snapshot, "dev_mismatched.jsonl"))
    assert len(rows) == 3 and all(r["gold_label"] != "-" for r in rows)
    only_letters = export_snapshot(create_snapshot(None, filters={"genres": ["letters"], "min_labels": 5}))
    assert only_letters.row_count == 3
    with pytest.raises(ValidationError) as error:
        create_snapshot(None, datasets=["nope"], filters={"colour": "red", "splits": ["validation"]})
    assert set(error.value.message_dict) == {"datasets", "filters.colour", "filters.splits"}


def test_done_snapshot_is_never_exported_again(small_corpus):
    snapshot = export_snapshot(create_snapshot(None))
    before = {p.name: p.read_bytes() for p in Path(snapshot.directory).iterdir()}
    add_pair(small_corpus["mini"], present(Pair.objects.first()).premise, "New pair.", FIVE_E)
    with pytest.raises(ExportRefused, match="never changes"):
        export_snapshot(snapshot)
    export_snapshot_task(snapshot.pk)  # the task refuses quietly
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.DONE and snapshot.row_count == 12
    assert {p.name: p.read_bytes() for p in Path(snapshot.directory).iterdir()} == before


def test_failure_midway_leaves_no_files_and_marks_failed(small_corpus):
    snapshot = create_snapshot(None)
    seen = []

    def interrupt(done, total):
        seen.append(done)
        raise OSError("No space left on device")

    with pytest.raises(OSError):
        export_snapshot(snapshot, progress=interrupt, page_size=2)
    snapshot.refresh_from_db()
    assert seen == [2]
    assert snapshot.status == JobStatus.FAILED and "No space left" in snapshot.error
    assert not snapshot.files.exists() and snapshot.content_hash == ""
    assert list(Path(settings.SNAPSHOT_DIR).iterdir()) == []
    # A failed snapshot can be exported again, and then it is complete.
    export_snapshot(snapshot)
    assert snapshot.status == JobStatus.DONE and snapshot.row_count == 12


def test_rename_failure_rolls_back_done(small_corpus):
    snapshot = create_snapshot(None)
    root = Path(settings.SNAPSHOT_DIR)
    root.mkdir(parents=True)
    (root / str(snapshot.pk)).write_text("something else lives here")
    with pytest.raises(OSError):
        export_snapshot(snapshot)
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.FAILED and snapshot.error
    assert not SnapshotFile.objects.exists()
    assert [p.name for p in root.iterdir()] == [str(snapshot.pk)]
    assert (root / str(snapshot.pk)).read_text() == "something else lives here"


def test_unwritable_snapshot_dir_fails_through_the_task(small_corpus, settings, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    settings.SNAPSHOT_DIR = blocker / "snapshots"
    snapshot = create_snapshot(None)
    with pytest.raises(OSError):
        export_snapshot_task(snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.FAILED and "not-a-folder" in snapshot.error
    assert not Snapshot.objects.filter(status=JobStatus.DONE).exists()


def test_export_snapshot_command_writes_out_dir(small_corpus, tmp_path, capsys):
    out = tmp_path / "out"
    call_command("export_snapshot", "--dataset", "captions-only", "--out", str(out))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["datasets"] == ["captions-only"] and manifest["rows"] == 3
    assert sorted(p.name for p in out.iterdir()) == ["dev.jsonl", "dev.tsv", "manifest.json", "test.jsonl", "test.tsv"]
    printed = capsys.readouterr().out
    assert manifest["content_hash"] in printed and "dev.jsonl" in printed
    assert Snapshot.objects.get().status == JobStatus.DONE


def test_export_snapshot_command_passes_each_filter_option(small_corpus, tmp_path):
    options = ["--split", "dev", "--gold-only", "--min-labels", "1", "--unvalidated-gold", "-"]
    options += ["--full-agreement", "--drop-ungrammatical", "--drop-test-fours", "--typing-flags"]
    call_command("export_snapshot", *options, "--out", str(tmp_path / "out"))
    assert Snapshot.objects.get().filters == {
        "genres": [],
        "splits": ["dev"],
        "gold_only": True,
        "min_labels": 1,
        "unvalidated_gold": "-",
        "full_agreement": True,
        "drop_ungrammatical": True,
        "drop_test_fours": True,
        "typing_flags": True,
        "label_rows": True,
    }


def test_snli_dev_round_trip(db, tmp_path):
    source = shared_file("snli_1.0_dev.jsonl")
    genre("captions")  # a training genre (get_or_create: seeded data may already have it)
    # --no-tag: without a broker the command would tag the 10,000 pairs inline (spaCy, most of this
    # test's time) and nothing here reads tags; the inline tagging has its own test
    # (tests/artifacts/test_tagging_jobs.py), and with a broker the import queues it either way.
    call_command("import_pairs", str(source), "--dataset", "snli", "--no-tag")
    dataset = Dataset.objects.get(slug="snli")
    snapshot = export_snapshot(create_snapshot(None, datasets=[dataset.slug]))
    # SNLI's only genre (captions) is a training genre: plain dev, no matched/mismatched.
    assert {f.name for f in snapshot.files.all()} == {"dev.jsonl", "dev.tsv"}
    original = read_jsonl(source)
    exported_rows = read_jsonl(exported(snapshot, "dev.jsonl"))
    assert len(exported_rows) == len(original) == 10000
    by_id = {row["pairID"]: row for row in exported_rows}
    assert len(by_id) == 10000
    for row in original:
        mine = by_id[row["pairID"]]
        for key in ["pairID", "gold_label", "annotator_labels"]:
            assert mine[key] == row[key], (row["pairID"], key)
        for key in ["sentence1", "sentence2"]:
            # Verbatim, surrounding whitespace included (a few SNLI dev sentences have some).
            assert mine[key] == row[key], (row["pairID"], key)
        assert mine["promptID"] == row["captionID"]
        assert mine["sentence1_parse"] == row["sentence1_parse"]
        assert mine["sentence2_binary_parse"] == row["sentence2_binary_parse"]
    tsv = pd.read_csv(exported(snapshot, "dev.tsv"), sep="\t", keep_default_na=False, dtype=str)
    assert len(tsv) == 10000 and (tsv["gold_label"] == "-").sum() == 158


def test_labels_of_excluded_workers_are_left_out(small_corpus, make_worker):
    excluded = make_worker(is_excluded=True)
    pair = Pair.objects.get(hypothesis="There is a café.")
    pair.labels.filter(position=3).update(worker=excluded, excluded=True)  # the mark the service sets
    snapshot = export_snapshot(create_snapshot(None, datasets=["mini"], filters={"splits": ["dev"]}))
    row = next(r for r in read_jsonl(exported(snapshot, "dev_matched.jsonl")) if r["pairID"] == pair.pair_id)
    assert row["annotator_labels"] == [Label.ENTAILMENT] * 3 + [Label.NEUTRAL]
    tsv = pd.read_csv(exported(snapshot, "dev_matched.tsv"), sep="\t", keep_default_na=False, dtype=str)
    line = tsv[tsv["pairID"] == pair.pair_id].iloc[0]
    assert [line[f"label{i}"] for i in range(1, 6)] == ["entailment", "entailment", "", "entailment", "neutral"]


def test_a_running_export_is_taken_over_only_when_stale(small_corpus):
    snapshot = create_snapshot(None)
    Snapshot.objects.filter(pk=snapshot.pk).update(status=JobStatus.RUNNING, started_at=timezone.now())
    with pytest.raises(ExportRefused, match="already being exported"):
        export_snapshot(snapshot)
    # Its worker died two hours ago, leaving a temporary folder behind.
    leftover = Path(settings.SNAPSHOT_DIR) / f".{snapshot.pk}-dead"
    leftover.mkdir(parents=True)
    (leftover / "train.jsonl").write_text("half a file")
    Snapshot.objects.filter(pk=snapshot.pk).update(started_at=timezone.now() - timedelta(hours=2))
    export_snapshot(snapshot)
    assert snapshot.status == JobStatus.DONE and snapshot.row_count == 12
    assert sorted(p.name for p in Path(settings.SNAPSHOT_DIR).iterdir()) == [str(snapshot.pk)]
