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
import struct
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import Any

from corpus.labels import to_scheme
from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, NO_GOLD, Split

from .format import TSV_COLUMNS, file_split
from .selectors import PAIR_COLUMNS

BLOCK_ROWS = 2048
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


class HashingFile:
    """A UTF-8 text sink that counts bytes and hashes them as they are written."""

    def __init__(self, path):
        self.path = path
        # Closed by close(): SplitWriter owns the file for the length of an export.
        self._file = open(path, "wb", buffering=1 << 20)  # noqa: SIM115
        self._sha = hashlib.sha256()
        self.bytes = 0
        self.rows = 0

    def write(self, text):
        return self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data):
        self._sha.update(data)
        self.bytes += len(data)
        return self._file.write(data)

    def close(self):
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
        self._jsonl_block: list[bytes] = []
        self._tsv_block: list[bytes] = []

    def write(self, record: dict[str, Any], labels: Sequence[tuple[int, str]]) -> None:
        self.jsonl.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.jsonl.rows += 1
        row = tsv_row(record, labels)
        if self.extra_columns:
            row += ["" if record.get(name) is None else record[name] for name in self.extra_columns]
        self._tsv_writer.writerow(row)
        self.tsv.rows += 1

    def write_encoded(self, jsonl_line, tsv_line):
        """A row whose lines the database made (`selectors.export_lines_sql`): UTF-8, newline included.

        Lines are gathered and written and hashed in blocks of BLOCK_ROWS (~1 MiB of MultiNLI):
        per-line calls into the hash and the file cost more than making the lines."""
        self._jsonl_block.append(jsonl_line)
        self._tsv_block.append(tsv_line)
        if len(self._jsonl_block) >= BLOCK_ROWS:
            self._flush_block()

    def extend_encoded(self, jsonl_lines, tsv_lines):
        """Many such rows at once, in order (a chunk of `streams`): written as one block."""
        self._flush_block()
        self._write_block(jsonl_lines, tsv_lines)

    def _flush_block(self):
        self._write_block(self._jsonl_block, self._tsv_block)
        self._jsonl_block, self._tsv_block = [], []

    def _write_block(self, jsonl_lines, tsv_lines):
        if jsonl_lines:
            self.jsonl.write_bytes(b"".join(jsonl_lines))
            self.tsv.write_bytes(b"".join(tsv_lines))
            self.jsonl.rows += len(jsonl_lines)
            self.tsv.rows += len(tsv_lines)

    def close(self) -> None:
        self._flush_block()
        self.jsonl.close()
        self.tsv.close()

    def files(self) -> list[dict[str, Any]]:
        return [
            {"name": sink.path.name, "split": self.split, "rows": sink.rows, "bytes": sink.bytes, "sha256": sink.sha256}
            for sink in (self.jsonl, self.tsv)
        ]


class ExportLineSink:
    """A file-like sink for the export's `COPY (...) TO STDOUT (FORMAT binary)`: every row is
    (route, JSONL line, TSV line), and its lines go to the SplitWriter that `writer_for_route(route)`
    names, as they stream in.

    The binary format needs no unescaping (text COPY escapes every backslash, which JSON lines are
    full of) and its fields are the database's UTF-8 bytes, written to the files as they are.
    psycopg2 calls `write` once per row the server sends, so the usual case (one whole row) is
    read with three fixed unpacks; rows split across writes, or several in one, take the general
    path. `on_rows(rows)` is called every `every` rows (progress).
    """

    SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
    _ROW_HEAD = struct.Struct("!hi")  # field count, first field's length
    _FIELD_COUNT = struct.Struct("!h")
    _FIELD_LENGTH = struct.Struct("!i")

    def __init__(self, writer_for_route, on_rows=None, every=5000):
        self.writer_for_route = writer_for_route
        self.on_rows = on_rows
        self.every = every
        self.rows = 0
        self.finished = False
        self._writers = {}
        self._pending = b""
        self._header_read = False

    def write(self, data):
        if not self._pending and self._header_read:
            try:
                fields, route_length = self._ROW_HEAD.unpack_from(data, 0)
                if fields == 3:
                    jsonl_at = 6 + route_length
                    tsv_at = jsonl_at + 4 + self._FIELD_LENGTH.unpack_from(data, jsonl_at)[0]
                    end = tsv_at + 4 + self._FIELD_LENGTH.unpack_from(data, tsv_at)[0]
                    if end == len(data) and route_length >= 0:
                        self._accept(data[6:jsonl_at], data[jsonl_at + 4 : tsv_at], data[tsv_at + 4 : end])
                        return
            except struct.error:
                pass
        self._write_general(data)

    def _accept(self, route, jsonl_line, tsv_line):
        writer = self._writers.get(route)
        if writer is None:
            writer = self._writers[route] = self.writer_for_route(route)
        writer.write_encoded(jsonl_line, tsv_line)
        self.rows += 1
        if self.on_rows is not None and self.rows % self.every == 0:
            self.on_rows(self.rows)

    def _write_general(self, data):
        data = self._pending + bytes(data)
        position = 0
        if not self._header_read:
            # Signature, 32-bit flags, 32-bit length of a header extension, the extension.
            if len(data) < 19:
                self._pending = data
                return
            if not data.startswith(self.SIGNATURE):
                raise ValueError("not a binary COPY stream")
            position = 19 + self._FIELD_LENGTH.unpack_from(data, 15)[0]
            self._header_read = True
        end = len(data)
        while position + 2 <= end:
            (fields,) = self._FIELD_COUNT.unpack_from(data, position)
            if fields == -1:  # the trailer
                self.finished = True
                position += 2
                break
            if fields != 3:
                raise ValueError(f"an export row has 3 fields, not {fields}")
            cursor, values = position + 2, []
            while len(values) < fields and cursor + 4 <= end:
                (length,) = self._FIELD_LENGTH.unpack_from(data, cursor)
                if length < 0 or cursor + 4 + length > end:
                    break
                values.append(data[cursor + 4 : cursor + 4 + length])
                cursor += 4 + length
            if len(values) < fields:
                if cursor + 4 <= end and self._FIELD_LENGTH.unpack_from(data, cursor)[0] < 0:
                    raise ValueError("an export row has a NULL line")
                break  # the row goes on in the next write
            self._accept(*values)
            position = cursor
        self._pending = data[position:]
