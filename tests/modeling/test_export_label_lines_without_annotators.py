"""A label file whose labels were all imported has no annotator (no pseudonym, catch trials or
flags): its statement reads no worker table, every label's line has the no-worker pieces in its
literals, and the bytes are still those the Python definition (`label_rows`) writes, in every
label scheme, with and without the typing flags."""

import pytest
from django.db import connection

from authorship.models import WritingEvidence
from corpus.models import Dataset, Label, LabelScheme, Split, ValidationLabel
from modeling.snapshots.format import LABELS_FILE, jsonl_line
from modeling.snapshots.label_rows import WORKERS_TABLE, label_rows, write_label_rows
from tests.modeling.conftest import add_pair, add_premise, genre
from tests.modeling.test_export_label_lines import TRICKY_FLOATS

pytestmark = pytest.mark.django_db
L = Label
LABELS = [L.ENTAILMENT, L.NEUTRAL, L.CONTRADICTION, L.ENTAILMENT, L.ENTAILMENT, L.NEUTRAL]


class RecordingCursor:
    """The connection's own cursor, keeping the text of every COPY it runs (the tables filled, the lines)."""

    def __init__(self, cursor):
        self.cursor = cursor
        self.copies = []

    def __getattr__(self, name):
        return getattr(self.cursor, name)

    def copy_expert(self, sql, file):
        self.copies.append(sql)
        return self.cursor.copy_expert(sql, file)


def imported_corpus(make_worker, scheme):
    """Pairs of every split, in a training and a held-out genre, with 1 to 6 imported labels each:
    tricky seconds, some excluded, ratings on an ordinal dataset, and typing flags on one author."""
    dataset = Dataset.objects.create(slug=f"imported-{scheme}", name="Imported", label_scheme=scheme)
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    pairs = []
    for index, split in enumerate([Split.TRAIN, Split.DEV, Split.TEST] * 4):
        premise = add_premise(dataset, letters if index % 2 else fiction, split, f"Premise {index}.")
        labels = LABELS[: 1 + index % len(LABELS)]
        pairs.append(add_pair(dataset, premise, f"Hypothesis {index}.", labels, pair_id=f'{index}"\t\\é'))
    label_ids = ValidationLabel.objects.filter(pair__dataset=dataset).order_by("pk").values_list("pk", flat=True)
    for index, label in enumerate(label_ids):
        ValidationLabel.objects.filter(pk=label).update(
            seconds=TRICKY_FLOATS[index % len(TRICKY_FLOATS)],
            excluded=index % 5 == 2,
            ordinal=index % 5 + 1 if scheme == LabelScheme.ORDINAL and index % 3 else None,
        )
    WritingEvidence.objects.create(
        pair=pairs[0], worker=make_worker(), field_name="hypothesis", has_evidence=True, flags=["pasted"], flagged=True
    )
    return dataset


@pytest.mark.parametrize("typing_flags", [False, True])
@pytest.mark.parametrize("scheme", [LabelScheme.THREE_WAY, LabelScheme.TWO_WAY, LabelScheme.ORDINAL])
def test_a_file_of_imported_labels_reads_no_worker_table_and_is_the_python_definition(
    make_worker, tmp_path, scheme, typing_flags
):
    dataset = imported_corpus(make_worker, scheme)
    filters = {"label_rows": True, "typing_flags": typing_flags}
    with connection.cursor() as wrapper:
        cursor = RecordingCursor(wrapper.cursor)
        entry = write_label_rows([dataset.slug], filters, scheme, tmp_path, cursor=cursor)
    (statement,) = [copy for copy in cursor.copies if "TO STDOUT" in copy]
    assert WORKERS_TABLE not in statement
    written = (tmp_path / LABELS_FILE).read_bytes()
    rows = list(label_rows([dataset.slug], filters, scheme))
    assert written == "".join(jsonl_line(row) for row in rows).encode("utf-8")
    assert entry["rows"] == len(rows) == ValidationLabel.objects.filter(pair__dataset=dataset).count()
    # Not a trivial file: every kind of value the folded literals stand for is there.
    assert {row["annotator"] for row in rows} == {None}
    assert {row["excluded"] for row in rows} == {row["counted"] for row in rows} == {True, False}
    assert {row["role"] for row in rows} == {"author", "validator"}
    assert None in {row["seconds"] for row in rows} and 3.0 in {row["seconds"] for row in rows}
    if scheme == LabelScheme.ORDINAL:
        assert {row["rating"] for row in rows} >= {None, 2, 5}
    if typing_flags:
        assert ["pasted"] in [row["typing_flags"] for row in rows]
