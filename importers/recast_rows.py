"""Reading the source rows of a recast from CSV, TSV or JSONL files; pure Python."""

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from base.json_errors import json_error_text
from importers.recast_templates import RecastError

FORMATS = {".csv": "csv", ".tsv": "tsv", ".txt": "tsv", ".jsonl": "jsonl"}


def read_rows(
    path: str | Path, fmt: str | None = None, fieldnames: Sequence[str] | None = None, number_field: str | None = None
) -> Iterator[dict[str, Any]]:
    """Lazily read a CSV, TSV (tabs only, no quoting) or JSONL file as dicts.

    fieldnames: for files without a header row (Kotzias et al.'s "sentence<TAB>score" files).
    number_field: add each row's 1-based position among the data rows under that name, as text
    (DNC's corpus-sent-id for sentiment is "<file> <position>").
    """
    path = Path(path)
    fmt = fmt or FORMATS.get(path.suffix.lower())
    if fmt not in ("csv", "tsv", "jsonl"):
        raise ValueError(f"{path}: say whether it is csv, tsv or jsonl (fmt=...)")
    reader = {"csv": _csv_rows, "tsv": _tsv_rows, "jsonl": _jsonl_rows}[fmt]
    for number, row in enumerate(reader(path, fieldnames), start=1):
        if number_field:
            row[number_field] = str(number)
        yield row


def _csv_rows(path: Path, fieldnames: Sequence[str] | None) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", newline="") as handle:
        yield from csv.DictReader(handle, fieldnames=fieldnames, strict=True)


def _tsv_rows(path: Path, fieldnames: Sequence[str] | None) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8", newline="") as handle:
        lines = (line.rstrip("\r\n") for line in handle)
        columns = list(fieldnames) if fieldnames else next(lines, "").split("\t")
        first_line = 1 if fieldnames else 2
        for line_number, line in enumerate(lines, start=first_line):
            if line == "":
                continue
            values = line.split("\t")
            if len(values) != len(columns):
                raise RecastError(
                    f"{path} line {line_number}: {len(values)} tab-separated fields, "
                    f"expected {len(columns)} ({', '.join(columns)})"
                )
            yield dict(zip(columns, values, strict=False))


def _jsonl_rows(path: Path, fieldnames: Sequence[str] | None) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise RecastError(
                    f"{path} line {line_number}: not valid JSON ({json_error_text(error, with_line=False)})"
                ) from None
            if not isinstance(record, dict):
                raise RecastError(f"{path} line {line_number}: a JSON object was expected")
            yield record
