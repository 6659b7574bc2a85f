"""The export's COPYs come in PostgreSQL's binary format (database_lines.COPY_OPTIONS): each line is
sent as its length and its bytes, unscanned and unquoted. The split files' writer
(writer.ExportFiles) and the label file's (label_rows.LineSink) take the lines out of those frames
byte for byte, whatever they hold (the characters a CSV COPY would quote, newlines, NUL-free control
characters, non-ASCII), with and without rows, and refuse a row they cannot read."""

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest
from django.db import connection

from modeling.snapshots.database_lines import COPY_OPTIONS
from modeling.snapshots.label_rows import LINE_COPY_OPTIONS, LineSink
from modeling.snapshots.writer import ExportFiles, ExportStreamError

pytestmark = pytest.mark.django_db

AWKWARD_LINES = [
    '{"a": "plain"}\n',
    '{"a": "quote \\" and backslash \\\\"}\n',
    'tab\there\t"quoted ""field"""\n',
    "\x01\x02 the CSV framing's own characters \x02\x02\x01\n",
    '"newline\ninside"\tand\r\ncarriage\n',
    "unicode é ü 中文 \U0001f600 \u2028 \x7f\n",
    "\n",
]


def copied(statement: str, params: Sequence[object], options: str) -> list[bytes]:
    """The messages of a COPY of `statement`, as psycopg2 hands them to a file's write."""
    messages: list[bytes] = []

    class Messages:
        def write(self, data: bytes) -> int:
            messages.append(bytes(data))
            return len(data)

    with connection.cursor() as wrapper:
        sql = wrapper.cursor.mogrify(statement, params).decode()
        wrapper.cursor.copy_expert(f"COPY ({sql}) TO STDOUT ({options})", Messages())
    return messages


def export_rows(rows: list[tuple[str, str, str]]) -> list[bytes]:
    if not rows:
        return copied("SELECT 'dev', 'x', 'y' WHERE false", [], COPY_OPTIONS)
    values = ", ".join("(%s, %s, %s, %s)" for _ in rows)
    params = [value for number, row in enumerate(rows) for value in (number, *row)]
    return copied(f"SELECT f, j, t FROM (VALUES {values}) AS r(n, f, j, t) ORDER BY n", params, COPY_OPTIONS)


def test_the_split_files_hold_the_lines_the_database_sent_byte_for_byte(tmp_path: Path) -> None:
    pairs_of_lines = zip(AWKWARD_LINES, reversed(AWKWARD_LINES), strict=True)
    rows = [(("dev_matched", "train")[number % 2], jsonl, tsv) for number, (jsonl, tsv) in enumerate(pairs_of_lines)]
    files = ExportFiles(tmp_path, every=3)
    for message in export_rows(rows):
        files.write(message)
    files.close()
    assert files.rows == len(rows)
    for split in ("dev_matched", "train"):
        jsonl = "".join(j for s, j, _ in rows if s == split).encode()
        tsv = files.header + "".join(t for s, _, t in rows if s == split).encode()
        assert (tmp_path / f"{split}.jsonl").read_bytes() == jsonl
        assert (tmp_path / f"{split}.tsv").read_bytes() == tsv
    entries = {entry["name"]: entry for entry in files.entries()}
    assert entries["train.jsonl"]["sha256"] == hashlib.sha256((tmp_path / "train.jsonl").read_bytes()).hexdigest()
    assert entries["train.jsonl"]["rows"] == sum(1 for s, _, _ in rows if s == "train")


def test_a_copy_without_rows_writes_no_split_file(tmp_path: Path) -> None:
    files = ExportFiles(tmp_path)
    for message in export_rows([]):
        files.write(message)
    files.close()
    assert files.rows == 0
    assert files.entries() == []


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT 'dev', 'only two fields'",
        "SELECT 'dev', NULL, 'a line'",
        "SELECT NULL, 'a line', 'a line'",
        "SELECT 'dev', 'a', 'b', 'four fields'",
    ],
)
def test_a_row_that_is_not_file_and_two_lines_is_refused(tmp_path: Path, statement: str) -> None:
    files = ExportFiles(tmp_path)
    with pytest.raises(ExportStreamError):
        for message in copied(statement, [], COPY_OPTIONS):
            files.write(message)


def test_a_truncated_row_is_refused(tmp_path: Path) -> None:
    message = export_rows([("dev", "a line\n", "a line\n")])[0]
    files = ExportFiles(tmp_path)
    with pytest.raises(ExportStreamError):
        files.write(message[:-3])


@pytest.mark.parametrize("batch", [1, 2, 1000])
@pytest.mark.parametrize("count", [0, 1, 2, 7])
def test_the_label_file_holds_the_lines_the_database_sent_byte_for_byte(tmp_path: Path, batch: int, count: int) -> None:
    lines = (AWKWARD_LINES * 2)[:count]
    statement = "SELECT l FROM unnest(%s::text[]) WITH ORDINALITY AS u(l, n) ORDER BY n"
    sink = LineSink(tmp_path / "labels.jsonl")
    sink.BATCH = batch
    for message in copied(statement, [lines], LINE_COPY_OPTIONS):
        sink.write(message)
    sink.close()
    written = "".join(lines).encode()
    assert (tmp_path / "labels.jsonl").read_bytes() == written
    assert (sink.rows, sink.bytes, sink.sha256) == (count, len(written), hashlib.sha256(written).hexdigest())
