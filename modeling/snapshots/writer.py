"""The MultiNLI file format: one pair as a JSONL object and as a TSV row, and the export's files.

`export_record` and `tsv_row` say in Python what each line holds (`record_lines` makes the lines
with format.jsonl_line / tsv_line); the export itself writes the lines PostgreSQL builds by the
same rules (database_lines.py), which tests pin equal to these. `ExportFiles` writes them.
The format's decisions (keys, columns, quoting, gold labels) are in modeling/snapshots/README.md.
"""

import hashlib
import struct
from collections.abc import Callable, Container, Sequence
from pathlib import Path
from typing import Any

from corpus.labels import to_scheme
from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, NO_GOLD, Split

from .format import EVALUATION_SPLITS, TRAIN_SPLIT, TSV_COLUMNS, file_split, jsonl_line, tsv_line
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


def tsv_row(record: dict[str, Any], labels: Sequence[tuple[int, str]], extra_columns: Sequence[str] = ()) -> list[Any]:
    """The TSV fields of a record: label1..5 by slot (empty where none), then `extra_columns`' values."""
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
        *("" if record.get(name) is None else record[name] for name in extra_columns),
    ]


def record_lines(
    record: dict[str, Any], labels: Sequence[tuple[int, str]], extra_columns: Sequence[str] = ()
) -> tuple[str, str]:
    """(JSONL line, TSV line) of a record, as format.py writes them."""
    return jsonl_line(record), tsv_line(tsv_row(record, labels, extra_columns))


class HashingBytes:
    """A binary sink that counts bytes and hashes them as they are written, `BATCH` writes at a time
    (per line those steps cost an export more than making its lines); final after close()."""

    BATCH = 2000

    def __init__(self, path: Path) -> None:
        self.path = path
        # Closed by close(): the export owns the file for its whole length.
        self._file = open(path, "wb", buffering=1 << 20)  # noqa: SIM115
        self._sha = hashlib.sha256()
        self._pending: list[Any] = []
        self.bytes = 0
        self.rows = 0

    def write(self, data: Any) -> int:
        self._pending.append(data)
        if len(self._pending) >= self.BATCH:
            self._flush()
        return len(data)

    def _joined(self) -> bytes:
        return b"".join(self._pending)

    def put(self, data: bytes, rows: int) -> None:
        """Bytes already joined (a page of `rows` lines), hashed and written now."""
        self._flush()
        self._sha.update(data)
        self.bytes += len(data)
        self.rows += rows
        self._file.write(data)

    def _flush(self) -> None:
        data = self._joined()
        self._pending.clear()
        self._sha.update(data)
        self.bytes += len(data)
        self._file.write(data)

    def close(self) -> None:
        self._flush()
        self._file.flush()
        self._file.close()

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    def entry(self, split: str) -> dict[str, Any]:
        """The file's manifest entry."""
        return {"name": self.path.name, "split": split, "rows": self.rows, "bytes": self.bytes, "sha256": self.sha256}


class HashingFile(HashingBytes):
    """HashingBytes for text, encoded as UTF-8 a batch at a time."""

    def _joined(self) -> bytes:
        return "".join(self._pending).encode("utf-8")


class ExportStreamError(RuntimeError):
    """A message of the export's COPY that is not a row of (file, JSONL line, TSV line) as
    database_lines frames it."""


SPLIT_FILES = frozenset((TRAIN_SPLIT, *EVALUATION_SPLITS))
# PostgreSQL's binary COPY format (database_lines.COPY_OPTIONS): a header (signature, flags, no
# extension) before the first row, each row its field count (int16) and each field its length
# (int32) and bytes, and -1 (int16) after the last row. psycopg2 hands over one protocol message at a
# time, a row each: the header comes with the first, the end alone (with the header when no row).
BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
BINARY_END = b"\xff\xff"
_LENGTH = struct.Struct(">i")
_EXPORT_ROW = struct.Struct(">h").pack(3)  # file, JSONL line, TSV line


def unframed(message: bytes) -> bytes:
    """A message of a binary COPY without the header, if it carries it; b"" for the end."""
    if message.startswith(BINARY_HEADER):
        message = message[len(BINARY_HEADER) :]
    return b"" if message == BINARY_END else message


def _unreadable(row: bytes) -> ExportStreamError:
    return ExportStreamError(f"an export row the writer cannot read: {bytes(row[:80])!r}…")


class ExportFiles:
    """The split files of an export, written from the rows of its COPY (database_lines): psycopg2
    calls `write` with each row, (file name, JSONL line, TSV line) in the binary COPY format. The
    lines go to `<file>.jsonl` and `<file>.tsv` a page of `every` rows at a time (per row, writing
    was most of the writer's time), and `on_rows(rows)` is called after every page."""

    def __init__(
        self,
        directory: Path,
        extra_columns: Sequence[str] = (),
        on_rows: Callable[[int], object] | None = None,
        every: int = 5000,
    ) -> None:
        self.directory = directory
        self.header = tsv_line((*TSV_COLUMNS, *extra_columns)).encode("utf-8")
        self.on_rows = on_rows
        self.every = every
        self.rows = 0
        self._sinks: dict[bytes, tuple[HashingBytes, HashingBytes]] = {}
        # Per file, the page's lines: JSONL and TSV line of each row in turn.
        self._page: dict[bytes, list[bytes]] = {}

    def write(self, row: bytes) -> None:
        if row[:2] != _EXPORT_ROW:
            row = unframed(row)
            if not row:
                return
        try:
            (name_length,) = _LENGTH.unpack_from(row, 2)
            jsonl_start = 10 + name_length
            (jsonl_length,) = _LENGTH.unpack_from(row, jsonl_start - 4)
            tsv_start = jsonl_start + jsonl_length + 4
            (tsv_length,) = _LENGTH.unpack_from(row, tsv_start - 4)
        except struct.error:
            raise _unreadable(row) from None
        if name_length <= 0 or jsonl_length < 0 or tsv_length < 0 or tsv_start + tsv_length != len(row):
            raise _unreadable(row)
        name = row[6 : 6 + name_length]
        lines = self._page.get(name)
        if lines is None:
            lines = self._open(name)
        lines.append(row[jsonl_start : tsv_start - 4])
        lines.append(row[tsv_start:])
        self.rows += 1
        if self.rows % self.every == 0:
            self._write_page()
            if self.on_rows is not None:
                self.on_rows(self.rows)

    def _open(self, name: bytes) -> list[bytes]:
        split = name.decode("ascii", "replace")
        if split not in SPLIT_FILES:
            raise ExportStreamError(f"an export row names no split file: {split!r}")
        jsonl, tsv = HashingBytes(self.directory / f"{split}.jsonl"), HashingBytes(self.directory / f"{split}.tsv")
        tsv.put(self.header, rows=0)
        self._sinks[name] = (jsonl, tsv)
        lines = self._page[name] = []
        return lines

    def _write_page(self) -> None:
        for name, lines in self._page.items():
            if lines:
                jsonl, tsv = self._sinks[name]
                jsonl.put(b"".join(lines[0::2]), rows=len(lines) // 2)
                tsv.put(b"".join(lines[1::2]), rows=len(lines) // 2)
                lines.clear()

    def close(self) -> None:
        try:
            self._write_page()
        finally:
            for jsonl, tsv in self._sinks.values():
                jsonl.close()
                tsv.close()

    def entries(self) -> list[dict[str, Any]]:
        """The files' manifest entries, by split name (JSONL then TSV)."""
        by_split = {name.decode("ascii"): sinks for name, sinks in self._sinks.items()}
        return [sink.entry(split) for split in sorted(by_split) for sink in by_split[split]]
