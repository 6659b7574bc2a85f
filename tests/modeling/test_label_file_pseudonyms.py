"""The label file's pseudonyms rank each annotator by their first label in the file, however the
worker's labels lie outside it: an earlier label in another dataset, or on a pair the snapshot's
filters leave out, does not count (label_rows.pseudonyms reads the lowest pair of all a worker's
labels first and reads again, against the snapshot's pairs, only those whose lowest pair is not
the snapshot's). The bytes are the Python definition's (`label_rows`), which walks the file."""

import json

import pytest

from corpus.models import Dataset, Label, Split
from corpus.services import add_labels
from modeling.snapshots.format import LABELS_FILE, jsonl_line
from modeling.snapshots.label_rows import label_rows, write_label_rows
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
L = Label


def test_a_workers_labels_outside_the_file_do_not_rank_them(make_worker, tmp_path):
    fiction = genre("fiction")
    other, mine = Dataset.objects.create(slug="other", name="Other"), Dataset.objects.create(slug="mine", name="Mine")
    # Created first: the lowest pair id of all, in another dataset.
    elsewhere = add_pair(other, add_premise(other, fiction, Split.DEV, "Elsewhere."), "Other.", [L.NEUTRAL])
    left_out = add_pair(mine, add_premise(mine, fiction, Split.TRAIN, "Train."), "Left out.", [L.NEUTRAL])
    second, third = (
        add_pair(mine, add_premise(mine, fiction, Split.DEV, f"Dev {n}."), f"Kept {n}.", [L.NEUTRAL], pair_id=name)
        for n, name in ((2, "second"), (3, "third"))
    )
    elsewhere_first, left_out_first, in_file_only = make_worker(), make_worker(), make_worker()
    add_labels([(elsewhere, L.ENTAILMENT), (third, L.ENTAILMENT)], worker=elsewhere_first)
    add_labels([(left_out, L.ENTAILMENT), (third, L.CONTRADICTION)], worker=left_out_first)
    add_labels([(second, L.NEUTRAL)], worker=in_file_only)
    filters = {"label_rows": True, "splits": ["dev"]}

    entry = write_label_rows([mine.slug], filters, "three_way", tmp_path)

    written = (tmp_path / LABELS_FILE).read_bytes()
    assert written == "".join(jsonl_line(row) for row in label_rows([mine.slug], filters, "three_way")).encode()
    rows = [json.loads(line) for line in written.decode().splitlines()]
    assert [(row["pairID"], row["position"], row["annotator"]) for row in rows] == [
        ("second", 1, None),
        ("second", 2, "a1"),
        ("third", 1, None),
        ("third", 2, "a2"),
        ("third", 3, "a3"),
    ]
    assert entry["rows"] == 5
