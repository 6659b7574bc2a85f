"""Reading SNLI / MultiNLI corpus files into one row shape.

Three layouts are understood:
- JSONL as distributed with SNLI and MultiNLI (`annotator_labels`, `captionID` or `promptID`, ...);
- the MultiNLI / SNLI TSV (header row; gold_label, sentence1..., promptID or captionID, pairID,
  genre, label1..label5);
- the GLUE MNLI TSV (index, promptID, pairID, genre, ..., label1[..label5], gold_label).

The TSV files are not quoted: a field runs from one tab to the next and quote characters are
part of the text (MultiNLI sentences often begin with quotes), so lines are split on tabs only
(what csv calls QUOTE_NONE). A line whose field count differs from the header is malformed.
"""

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from base.json_errors import json_error_text
from corpus.models import LABELS_PER_PAIR, Label, Split

LABELS = frozenset(label.value for label in Label)
MAX_LABELS = LABELS_PER_PAIR
SNLI_GENRE = "captions"
# The database's limits (corpus.models: Pair.pair_id, Premise.prompt_id are 64 characters), and
# the longest sentence kept: a longer premise or hypothesis is a malformed line, not a pair.
MAX_ID_CHARS = 64
MAX_SENTENCE_CHARS = 2000
MAX_GENRE_CHARS = 50

_SPLIT_IN_NAME = re.compile(r"(?:^|[_\-.])(train|dev|test)(?=$|[_\-.])")


class MalformedRow(ValueError):
    """A line that cannot become a pair; its message says why."""


@dataclass
class CorpusRow:
    line: int
    pair_id: str
    prompt_id: str
    premise: str
    hypothesis: str
    author_label: str
    labels: list[str]  # the valid labels in file order, the author's first
    skipped_labels: int = 0  # labels outside the label set (e.g. "" in annotator_labels)
    genre: str = ""  # the row's own genre field, if it has one
    is_caption: bool = False  # an SNLI row (captionID): its genre is "captions" unless told otherwise
    file_gold: str = ""
    premise_parse: str = ""
    premise_binary_parse: str = ""
    hypothesis_parse: str = ""
    hypothesis_binary_parse: str = ""


def split_from_filename(path: str | os.PathLike[str]) -> str | None:
    """'snli_1.0_dev.jsonl' -> dev, 'dev_matched.tsv' -> dev, 'multinli_1.0_train.txt' -> train."""
    stem = Path(path).name.lower()
    found = _SPLIT_IN_NAME.findall(stem)
    if not found:
        return None
    split = found[-1]
    return Split(split).value


def is_tsv(path: str | os.PathLike[str]) -> bool:
    return Path(path).suffix.lower() in {".tsv", ".txt"}


def text_of(value: object) -> str:
    """A file's field as text: None (a missing field, JSON null) is empty."""
    return "" if value is None else str(value)


def _row(line: int, record: Mapping[str, object], raw_labels: list[str]) -> CorpusRow:
    """Validate one record (a dict of the file's fields) and build the row."""
    pair_id = text_of(record.get("pairID")).strip()
    prompt_id = text_of(record.get("promptID") or record.get("captionID")).strip()
    # Sentences are kept verbatim (trailing spaces included) so that an export gives them back as read.
    premise = text_of(record.get("sentence1"))
    hypothesis = text_of(record.get("sentence2"))
    missing = [
        name
        for name, value in (
            ("pairID", pair_id),
            ("promptID/captionID", prompt_id),
            ("sentence1", premise),
            ("sentence2", hypothesis),
        )
        if not value.strip()
    ]
    if missing:
        raise MalformedRow(f"missing {', '.join(missing)}")
    _check_text_fields(record)
    for name, value in (("pairID", pair_id), ("promptID/captionID", prompt_id)):
        if len(value) > MAX_ID_CHARS:
            raise MalformedRow(f"{name} is {len(value)} characters; at most {MAX_ID_CHARS}")
    for name, value in (("sentence1", premise), ("sentence2", hypothesis)):
        if len(value) > MAX_SENTENCE_CHARS:
            raise MalformedRow(f"{name} is {len(value)} characters; at most {MAX_SENTENCE_CHARS}")
    if len(text_of(record.get("genre")).strip()) > MAX_GENRE_CHARS:
        raise MalformedRow(f"genre is longer than {MAX_GENRE_CHARS} characters")
    if not raw_labels:
        raise MalformedRow("no labels (annotator_labels / label1 is empty)")
    author_label = raw_labels[0]
    if author_label not in LABELS:
        raise MalformedRow(f"unknown label {author_label!r} in label1 (the author's label)")
    labels = [label for label in raw_labels if label in LABELS]
    if len(labels) > MAX_LABELS:
        raise MalformedRow(f"{len(labels)} labels; a pair has at most {MAX_LABELS}")
    return CorpusRow(
        line=line,
        pair_id=pair_id,
        prompt_id=prompt_id,
        premise=premise,
        hypothesis=hypothesis,
        author_label=author_label,
        labels=labels,
        skipped_labels=len(raw_labels) - len(labels),
        genre=text_of(record.get("genre")).strip(),
        is_caption=bool(record.get("captionID")) and not record.get("promptID"),
        file_gold=text_of(record.get("gold_label")).strip(),
        premise_parse=text_of(record.get("sentence1_parse")),
        premise_binary_parse=text_of(record.get("sentence1_binary_parse")),
        hypothesis_parse=text_of(record.get("sentence2_parse")),
        hypothesis_binary_parse=text_of(record.get("sentence2_binary_parse")),
    )


def _check_text_fields(record: Mapping[str, object]) -> None:
    """Every field is plain text or a number, without NUL characters (PostgreSQL text cannot
    hold them): an object where a sentence belongs, or a NUL, makes the line malformed."""
    for name, value in record.items():
        if name == "annotator_labels":
            continue
        if isinstance(value, (dict, list)):
            raise MalformedRow(f"{name} is not text")
        if "\x00" in text_of(value) or "\x00" in str(name):
            raise MalformedRow(f"{str(name).replace(chr(0), '')} contains a NUL character")


def parse_jsonl_line(line_number: int, text: str) -> CorpusRow:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedRow(f"not valid JSON ({json_error_text(error, with_line=False)})") from None
    if not isinstance(record, dict):
        raise MalformedRow("a JSON object was expected")
    raw_labels = record.get("annotator_labels")
    if raw_labels is None:
        # Some releases carry only gold_label + label1 style fields.
        raw_labels = [record.get(f"label{i}") for i in range(1, MAX_LABELS + 1)]
        raw_labels = [label for label in raw_labels if label]
    if not isinstance(raw_labels, list):
        raise MalformedRow("annotator_labels is not a list")
    if any(isinstance(label, (dict, list)) for label in raw_labels):
        raise MalformedRow("annotator_labels holds something other than labels")
    raw_labels = [text_of(label).strip() for label in raw_labels]
    return _row(line_number, record, raw_labels)


class TsvHeader:
    """Column positions of a MultiNLI/SNLI/GLUE TSV, from its header row."""

    REQUIRED = ("sentence1", "sentence2", "pairID", "label1")

    def __init__(self, text: str) -> None:
        self.columns = text.rstrip("\r\n").split("\t")
        missing = [name for name in self.REQUIRED if name not in self.columns]
        if "promptID" not in self.columns and "captionID" not in self.columns:
            missing.append("promptID")
        if missing:
            raise MalformedRow(f"header lacks column(s) {', '.join(missing)}")
        self.label_columns = [f"label{i}" for i in range(1, MAX_LABELS + 1) if f"label{i}" in self.columns]

    def parse(self, line_number: int, text: str) -> CorpusRow:
        values = text.rstrip("\r\n").split("\t")
        if len(values) != len(self.columns):
            raise MalformedRow(f"{len(values)} tab-separated fields, the header has {len(self.columns)}")
        record = dict(zip(self.columns, values, strict=False))
        # An empty labelN cell means "no label" (train pairs have only label1), not a bad label.
        raw_labels = [record[name].strip() for name in self.label_columns]
        while raw_labels and raw_labels[-1] == "":
            raw_labels.pop()
        return _row(line_number, record, raw_labels)
