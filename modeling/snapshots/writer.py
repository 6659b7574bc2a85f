"""The MultiNLI file format: one pair as a JSONL object and as a TSV row.

Format decisions (see also modeling/snapshots/README.md):
- JSONL keys are those of the MultiNLI 1.0 files, in the same (alphabetical) order, followed by one
  addition, `dataset` (the row's dataset slug, for runs that mix corpora). Every dataset
  is written in this one format, SNLI included: SNLI's `captionID` is carried in `promptID`
  and its genre (`captions`) in `genre`, so one reader serves every snapshot.
- TSV columns are MultiNLI's: gold_label, the four parses, sentence1, sentence2, promptID,
  pairID, genre, label1..label5 (label1 = the author's; empty where a label is missing).
  Unlike the original MultiNLI TSV (which needs quoting=QUOTE_NONE and breaks on stray quotes),
  fields holding a tab, newline or double quote are quoted the csv way (QUOTE_MINIMAL, quotes
  doubled), which `pandas.read_csv(sep="\\t", keep_default_na=False)` reads back unchanged.
- annotator_labels: the author's label first, then the validators' in position order; labels
  of excluded workers are left out, as they are left out of gold labels.
- gold_label: the pair's gold label (>= 3 of 5 votes, else "-"). A training pair that was never
  sent to validation has, by the convention of SNLI and MultiNLI, its author's label as gold
  (filter `unvalidated_gold`: "author", the default, or "-" to leave such pairs without gold).
  "author-all" extends the convention to every split, for recast data such as DNC whose dev and
  test labels are the released ones (imported once, not queued for validation).
"""

import csv
import hashlib
import json
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import Any

from corpus.labels import to_scheme
from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, NO_GOLD, Split

from .format import TSV_COLUMNS, file_split
from .selectors import PAIR_COLUMNS

_COL = {name: index for index, name in enumerate(PAIR_COLUMNS)}


def record_file(values: Sequence[Any], held_out_datasets: Container[str]) -> str:
    """The split file (without extension) of one row of `selectors.rows_for_export`."""
    return file_split(
        values[_COL["premise__split"]],
        values[_COL["premise__genre__is_training"]],
        values[_COL["dataset__slug"]] in held_out_datasets,
    )


def export_record(
    values: Sequence[Any],
    labels: Sequence[tuple[int, str]],
    unvalidated_gold: str = "author",
    scheme: str | None = None,
) -> dict[str, Any]:
    """One pair as the MultiNLI JSONL dict (keys in file order) plus its label by position.

    `labels` are already in the scheme's words (selectors.labels_in_scheme); the gold label is
    renamed here: two-way and ordinal datasets write entailed / not-entailed.
    """
    gold = values[_COL["gold_label"]]
    if (
        gold == NO_GOLD
        and unvalidated_gold in ("author", "author-all")
        and not values[_COL["needs_validation"]]
        and values[_COL["label_count"]] <= 1
        and (values[_COL["premise__split"]] == Split.TRAIN or unvalidated_gold == "author-all")
    ):
        gold = values[_COL["author_label"]]
    gold = to_scheme(scheme, gold)
    record = {
        "annotator_labels": [label for _, label in labels],
        "genre": values[_COL["premise__genre__slug"]],
        "gold_label": gold,
        "pairID": values[_COL["pair_id"]],
        "promptID": values[_COL["premise__prompt_id"]],
        "sentence1": values[_COL["premise__text"]],
        "sentence1_binary_parse": values[_COL["premise__binary_parse"]],
        "sentence1_parse": values[_COL["premise__parse"]],
        "sentence2": values[_COL["hypothesis"]],
        "sentence2_binary_parse": values[_COL["binary_parse"]],
        "sentence2_parse": values[_COL["parse"]],
        # Not a MultiNLI key (readers ignore it): which corpus a row comes from, so a training run can mix two.
        "dataset": values[_COL["dataset__slug"]],
    }
    return record


def tsv_row(record, labels):
    by_position = dict(labels)
    return [
        record["gold_label"],
        record["sentence1_binary_parse"],
        record["sentence2_binary_parse"],
        record["sentence1_parse"],
        record["sentence2_parse"],
        record["sentence1"],
        record["sentence2"],
        record["promptID"],
        record["pairID"],
        record["genre"],
        *(by_position.get(position, "") for position in range(AUTHOR_POSITION, LABELS_PER_PAIR + 1)),
    ]


# One encoder for every line (json.dumps with options builds a new one per call); same output.
encode_json = json.JSONEncoder(ensure_ascii=False).encode


class HashingFile:
    """A UTF-8 text sink that counts bytes and hashes them as they are written.

    Text is kept until `BATCH` writes have come and then encoded, hashed and written at once:
    per line those three steps cost the export more than reading its rows (issue 53.4). The
    bytes, hash and file are the same as line by line; `bytes` and `sha256` are final after close()."""

    BATCH = 2000

    def __init__(self, path):
        self.path = path
        # Closed by close(): SplitWriter owns the file for the length of an export.
        self._file = open(path, "wb", buffering=1 << 20)  # noqa: SIM115
        self._sha = hashlib.sha256()
        self._pending: list[str] = []
        self.bytes = 0
        self.rows = 0

    def write(self, text):
        self._pending.append(text)
        if len(self._pending) >= self.BATCH:
            self._flush()
        return len(text)

    def _flush(self):
        data = "".join(self._pending).encode("utf-8")
        self._pending.clear()
        self._sha.update(data)
        self.bytes += len(data)
        self._file.write(data)

    def close(self):
        self._flush()
        self._file.flush()
        self._file.close()

    @property
    def sha256(self):
        return self._sha.hexdigest()


class SplitWriter:
    """The JSONL and TSV file of one split, written side by side."""

    def __init__(self, directory: Path, split: str, extra_columns: Iterable[str] = ()) -> None:
        self.split = split
        self.jsonl = HashingFile(directory / f"{split}.jsonl")
        self.tsv = HashingFile(directory / f"{split}.tsv")
        # Optional fields after MultiNLI's (the aggregation option): record keys, TSV columns at the end.
        self.extra_columns = tuple(extra_columns)
        # lineterminator "\n": the files are byte-identical across platforms.
        self._tsv_writer = csv.writer(self.tsv, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
        self._tsv_writer.writerow((*TSV_COLUMNS, *self.extra_columns))

    def write(self, record: dict[str, Any], labels: Sequence[tuple[int, str]]) -> None:
        self.jsonl.write(encode_json(record) + "\n")
        self.jsonl.rows += 1
        row = tsv_row(record, labels)
        if self.extra_columns:
            row += ["" if record.get(name) is None else record[name] for name in self.extra_columns]
        self._tsv_writer.writerow(row)
        self.tsv.rows += 1

    def close(self) -> None:
        self.jsonl.close()
        self.tsv.close()

    def files(self) -> list[dict[str, Any]]:
        return [
            {"name": sink.path.name, "split": self.split, "rows": sink.rows, "bytes": sink.bytes, "sha256": sink.sha256}
            for sink in (self.jsonl, self.tsv)
        ]
