"""How a snapshot's hypotheses were written: the manifest counts the pairs with typing
evidence and each judgement's flags, and labels.jsonl can carry the author's typing flags."""

import json
from pathlib import Path
from typing import Any

import pytest

from authorship.models import WritingEvidence
from base.long_tasks import JobStatus
from corpus.models import Dataset, Label, Split
from corpus.services import add_labels
from modeling.snapshots.format import LABELS_FILE, read_manifest
from modeling.snapshots.label_rows import TYPING_FLAGS_COLUMN
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
E, N = Label.ENTAILMENT.value, Label.NEUTRAL.value


@pytest.fixture
def written(make_worker):
    """Six dev pairs: two typed, one pasted, one pasted after leaving the tab and repeated, one with
    a record but no evidence (no script), one with no record at all; a validator labels them all."""
    dataset = Dataset.objects.create(slug="typed", name="typed")
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, Split.DEV, f"A premise {i}."), f"Hypothesis {i}.", [E])
        for i in range(6)
    ]
    writer = make_worker()
    records = [
        (True, []),
        (True, []),
        (True, ["pasted"]),
        (True, ["pasted", "pasted-after-away", "repeated"]),
        (False, ["no-evidence"]),
    ]
    for pair, (has_evidence, flags) in zip(pairs, records, strict=False):
        WritingEvidence.objects.create(
            pair=pair,
            worker=writer,
            field_name="hypothesis",
            has_evidence=has_evidence,
            flags=flags,
            flagged=bool(set(flags) - {"no-evidence"}),
        )
    add_labels([(pair, N) for pair in pairs], worker=make_worker(), seconds=5.0)
    return pairs


def export(**filters):
    snapshot = export_snapshot(create_snapshot(None, datasets=["typed"], filters=filters))
    assert snapshot.status == JobStatus.DONE
    return Path(snapshot.directory)


def test_the_manifest_counts_the_pairs_with_typing_evidence_and_each_judgements_flags(written):
    manifest = read_manifest(export())
    assert manifest["typing_evidence"] == {
        "recorded": 5,
        "with_evidence": 4,
        "flagged": 2,
        "flags": {
            "pasted": 2,
            "not-typed": 0,
            "machine-cadence": 0,
            "pasted-after-away": 1,
            "repeated": 1,
            "copy": 0,
            "no-evidence": 1,
            "times-outside-claim": 0,
            "too-fast": 0,
        },
    }


def test_every_flag_a_record_carries_is_in_the_manifests_breakdown(written, make_worker):
    WritingEvidence.objects.filter(pair=written[0]).update(flags=["copy", "too-fast"], flagged=True)
    WritingEvidence.objects.filter(pair=written[1]).update(flags=["times-outside-claim"], flagged=True)
    counts = read_manifest(export())["typing_evidence"]
    assert counts["flagged"] == 4
    assert {flag: counts["flags"][flag] for flag in ("copy", "too-fast", "times-outside-claim")} == {
        "copy": 1,
        "too-fast": 1,
        "times-outside-claim": 1,
    }


def test_the_manifest_counts_only_the_snapshots_pairs(written):
    manifest = read_manifest(export(splits=["train"]))
    assert manifest["rows"] == 0
    assert manifest["typing_evidence"]["recorded"] == 0 and manifest["typing_evidence"]["flagged"] == 0


def test_the_label_file_gives_the_authors_row_its_typing_flags_and_the_same_bytes_every_time(written):
    first, second = export(label_rows=True, typing_flags=True), export(label_rows=True, typing_flags=True)
    assert (first / LABELS_FILE).read_bytes() == (second / LABELS_FILE).read_bytes()
    rows = [json.loads(line) for line in (first / LABELS_FILE).read_text(encoding="utf-8").splitlines()]
    by_pair: dict[str, dict[str, Any]] = {}
    for row in rows:
        by_pair.setdefault(row["pairID"], {})[row["role"]] = row[TYPING_FLAGS_COLUMN]
    pair_ids = [pair.pair_id for pair in written]
    assert [by_pair[pid]["author"] for pid in pair_ids] == [
        [],
        [],
        ["pasted"],
        ["pasted", "pasted-after-away", "repeated"],
        ["no-evidence"],
        [],
    ]
    assert {tuple(by_pair[pid]["validator"]) for pid in pair_ids} == {()}


def test_without_the_option_the_label_file_has_no_typing_column(written):
    rows = (export(label_rows=True) / LABELS_FILE).read_text(encoding="utf-8").splitlines()
    assert all(TYPING_FLAGS_COLUMN not in json.loads(line) for line in rows)


def test_typing_flags_alone_turns_on_the_label_file(written):
    """Any request the API's schema allows is taken (schemathesis): typing_flags asks for a column
    of labels.jsonl, so it asks for the file."""
    snapshot = create_snapshot(None, datasets=["typed"], filters={"typing_flags": True})
    assert snapshot.filters["label_rows"] is True and snapshot.filters["typing_flags"] is True
