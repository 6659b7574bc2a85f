"""The label-level file of a snapshot: one row per label of the snapshot's pairs.

Asked for with the filter `label_rows: true`; written as `labels.jsonl`, hashed and listed in the
manifest like the split files. Its columns are in modeling/snapshots/README.md. A market's worker id
must never leave the platform, so each annotator is a pseudonym, `a<rank>`: the dense rank of their
first label in file order, stable within the snapshot and needing no secret, so exporting the same
data again gives the same bytes.

`label_rows` defines the file in Python; the export writes the lines PostgreSQL builds by the same
rules (`label_lines_sql`, streamed by one COPY and hashed as they pass: `write_label_rows`), which
tests/modeling/test_export_label_lines.py pins to it byte for byte.
"""

import csv
import io
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.models import BooleanField, Case, F, Min, QuerySet, Value, When
from django.db.models.expressions import RawSQL

from authorship.selectors import typing_flags_of_pairs
from base.subquery import EqualsAny
from corpus.labels import AUTHOR_POSITION, NO_GOLD, to_scheme
from corpus.labels import LABELS as SCHEME_STORED_LABELS
from corpus.models import Pair, ValidationLabel
from corpus.selectors import in_gold
from quality.selectors import catch_figures, flag_marks

from .database_lines import COPY_OPTIONS, file_sql, in_scheme, json_float, json_text, literal
from .format import LABELS_FILE, file_split, json_value
from .selectors import datasets_with_held_out_genres, held_out_dataset_ids, pairs_for_export
from .writer import BINARY_END, BINARY_HEADER, ExportStreamError, HashingBytes

LABEL_ROWS_FILTER = "label_rows"
# label_lines_sql writes the keys in this order: change the two together.
LABEL_COLUMNS = (
    "pairID",
    "split",
    "position",
    "role",
    "annotator",
    "label",
    "rating",
    "seconds",
    "excluded",
    "counted",
    "catch_trials_seen",
    "catch_trials_matched",
    "flags",
)
TYPING_FLAGS_FILTER = "typing_flags"
TYPING_FLAGS_COLUMN = "typing_flags"
FLAG_PREFIX = "flagged: "
CHUNK = 5000
_LINE_FRAME = 6  # a binary COPY row of one field: the field count (int16) and its length (int32)

_FIELDS = (
    "pair_id",
    "pair__pair_id",
    "pair__premise__split",
    "pair__premise__genre__is_training",
    "pair__dataset__slug",
    "position",
    "worker_id",
    "label",
    "ordinal",
    "seconds",
    "excluded",
    "in_gold",
)


def _snapshot_pairs(datasets: Sequence[str], filters: Mapping[str, Any], upper_id: int | None = None) -> QuerySet[Pair]:
    """The snapshot's pairs (those up to `upper_id`)."""
    pairs = pairs_for_export(datasets, filters)
    if upper_id is not None:
        pairs = pairs.filter(pk__lte=upper_id)
    return pairs


def _labels(datasets: Sequence[str], filters: Mapping[str, Any], upper_id: int | None = None) -> Any:
    """The snapshot's labels in file order, with `in_gold`."""
    return (
        ValidationLabel.objects.filter(pair__in=_snapshot_pairs(datasets, filters, upper_id).values("pk"))
        .annotate(in_gold=Case(When(in_gold(), then=Value(True)), default=Value(False), output_field=BooleanField()))
        .order_by("pair_id", "position")
    )


def label_rows(
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    scheme: str | None,
    *,
    flagged: Callable[[Iterable[int]], Mapping[int, list[str]]] = flag_marks,
    upper_id: int | None = None,
) -> Iterable[dict[str, Any]]:
    """The rows of `labels.jsonl` in file order, made in Python (streamed): the file's definition,
    which tests pin `label_lines_sql` to."""
    labels = _labels(datasets, filters, upper_id).values_list(*_FIELDS)
    typing: Mapping[int, list[str]] | None = None
    if filters.get(TYPING_FLAGS_FILTER):
        # One read of the records that carry a flag (a share of the pairs), not one per row.
        typing = _typing_flags(datasets, filters, upper_id)
    workers = set(labels.exclude(worker__isnull=True).values_list("worker_id", flat=True).distinct().order_by())
    flags = {pk: sorted(mark.removeprefix(FLAG_PREFIX) for mark in marks) for pk, marks in flagged(workers).items()}
    catch = catch_figures()
    held_out = datasets_with_held_out_genres(datasets)
    pseudonyms: dict[int, str] = {}
    for (
        pair_pk,
        pair_id,
        split,
        is_training,
        dataset,
        position,
        worker,
        label,
        rating,
        seconds,
        excluded,
        counted,
    ) in labels.iterator(chunk_size=CHUNK):
        annotator = None
        if worker is not None:
            annotator = pseudonyms.setdefault(worker, f"a{len(pseudonyms) + 1}")
        seen, matched = catch.get(worker, (0, 0)) if worker is not None else (0, 0)
        row = {
            "pairID": pair_id,
            "split": file_split(split, is_training, dataset in held_out),
            "position": position,
            "role": "author" if position == AUTHOR_POSITION else "validator",
            "annotator": annotator,
            "label": to_scheme(scheme, label),
            "rating": rating,
            "seconds": seconds,
            "excluded": bool(excluded),
            "counted": bool(counted),
            "catch_trials_seen": seen,
            "catch_trials_matched": matched,
            "flags": flags.get(worker, []) if worker is not None else [],
        }
        if typing is not None:
            row[TYPING_FLAGS_COLUMN] = typing.get(pair_pk, []) if position == AUTHOR_POSITION else []
        yield row


def _typing_flags(datasets: Sequence[str], filters: Mapping[str, Any], upper_id: int | None) -> dict[int, list[str]]:
    return typing_flags_of_pairs(_snapshot_pairs(datasets, filters, upper_id).values("pk"))


# The database's lines are framed as the split files' (database_lines.COPY_OPTIONS): the binary
# COPY format, each row one field, the line with its newline, as the database made it (LineSink).
LINE_COPY_OPTIONS = COPY_OPTIONS
# Filled before the COPY (pg_temp, dropped after) with what Python formats, a few rows per annotator
# or flagged pair; the database formats every line.
WORKERS_TABLE = "snapshot_label_workers"
TYPING_TABLE = "snapshot_label_typing"


def pseudonyms(pairs: QuerySet[Pair]) -> dict[int, str]:
    """{worker id: `a<n>`}, n the rank of the worker's first label in file order (pair, position)
    among the labels of `pairs`, as `label_rows` gives them, by grouped reads. A worker's lowest pair
    over all their labels (one pass of the label table) is kept where the snapshot has it; only the
    others are read again against the snapshot's pairs, a set costly to build."""
    lowest = _lowest_pairs(ValidationLabel.objects.all())
    kept = set(
        pairs.filter(EqualsAny(F("pk"), RawSQL("%s::bigint[]", [sorted(set(lowest.values()))]))).values_list(
            "pk", flat=True
        )
    )
    first_pairs = {worker: pair for worker, pair in lowest.items() if pair in kept}
    others = sorted(worker for worker in lowest if worker not in first_pairs)
    if others:
        first_pairs |= _lowest_pairs(
            ValidationLabel.objects.filter(
                EqualsAny(F("worker_id"), RawSQL("%s::bigint[]", [others])), pair__in=pairs.values("pk")
            )
        )
    first_positions: dict[int, int] = {}
    for worker, pair, position in (
        ValidationLabel.objects.filter(pair_id__in=set(first_pairs.values()), worker_id__in=first_pairs)
        .order_by()
        .values_list("worker_id", "pair_id", "position")
    ):
        if first_pairs[worker] == pair:
            first_positions[worker] = min(position, first_positions.get(worker, position))
    order = sorted(first_pairs, key=lambda worker: (first_pairs[worker], first_positions[worker]))
    return {worker: f"a{rank}" for rank, worker in enumerate(order, start=1)}


def _lowest_pairs(labels: QuerySet[ValidationLabel]) -> dict[int, int]:
    """{worker id: the lowest pair id of their labels among `labels`}."""
    return dict(
        labels.exclude(worker__isnull=True)
        .order_by()
        .values("worker_id")
        .annotate(first=Min("pair_id"))
        .values_list("worker_id", "first")
    )


def _fill_worker_facts(cursor: Any, datasets: Sequence[str], filters: Mapping[str, Any], upper_id: int | None) -> int:
    """WORKERS_TABLE: the file's annotators' pseudonyms, catch-trial figures and flags, as JSON; how
    many annotators the file has."""
    names = pseudonyms(_snapshot_pairs(datasets, filters, upper_id))
    flags = {pk: sorted(mark.removeprefix(FLAG_PREFIX) for mark in marks) for pk, marks in flag_marks(names).items()}
    catch = catch_figures()
    rows = []
    for worker, name in names.items():
        seen, matched = catch.get(worker, (0, 0))
        tail = _worker_tail(seen, matched, json_value(flags.get(worker, [])), bool(filters.get(TYPING_FLAGS_FILTER)))
        rows.append((worker, json_value(name), tail))
    _fill(cursor, WORKERS_TABLE, "worker_id bigint PRIMARY KEY, annotator text, tail text", rows)
    return len(rows)


# The end of a line after the worker's flags; with typing flags, the text before their value.
_LINE_END = "}\n"


def _worker_tail(seen: int, matched: int, flags: str, typing_flags: bool) -> str:
    """A line from the catch trials' value on, to the next value of the row (the line's keys in
    order, as jsonl_line writes them)."""
    end = _key(TYPING_FLAGS_COLUMN) if typing_flags else _LINE_END
    return f"{seen}{_key('catch_trials_matched')}{matched}{_key('flags')}{flags}{end}"


def _no_worker_tail(typing_flags: bool) -> str:
    """`_worker_tail` of a label without a worker (imported): no catch trials, no flags."""
    return _worker_tail(0, 0, "[]", typing_flags)


def _fill_typing_flags(cursor: Any, datasets: Sequence[str], filters: Mapping[str, Any], upper_id: int | None) -> None:
    """TYPING_TABLE: the typing flags, as JSON, of the snapshot's pairs that have some."""
    rows = ((pair, json_value(flags)) for pair, flags in _typing_flags(datasets, filters, upper_id).items())
    _fill(cursor, TYPING_TABLE, "pair_id bigint PRIMARY KEY, flags text", rows)


def _fill(cursor: Any, table: str, columns: str, rows: Iterable[Sequence[Any]]) -> None:
    cursor.execute(f"DROP TABLE IF EXISTS pg_temp.{table}")
    cursor.execute(f"CREATE TEMPORARY TABLE {table} ({columns})")
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    buffer.seek(0)
    cursor.copy_expert(f"COPY pg_temp.{table} FROM STDIN (FORMAT csv)", buffer)
    cursor.execute(f"ANALYZE pg_temp.{table}")


def _key(key: str, first: bool = False) -> str:
    """The text jsonl_line writes before a key's value."""
    return ("{" if first else ", ") + json.dumps(key) + ": "


@dataclass(frozen=True)
class _Sql:
    """A piece of a line that is a value of the row (SQL giving text, never NULL)."""

    expression: str


@dataclass(frozen=True)
class _Choice:
    """Pieces of a line that depend on the row: those of the first case whose condition holds, else
    `otherwise`."""

    cases: tuple[tuple[str, tuple["_Part", ...]], ...]
    otherwise: tuple["_Part", ...]


_Part = str | _Sql | _Choice  # a str is literal text


def _either(condition: str, then: Sequence[_Part], otherwise: Sequence[_Part]) -> _Choice:
    return _Choice(((condition, tuple(then)),), tuple(otherwise))


def _concatenation(parts: Sequence[_Part], decided: Mapping[str, bool]) -> str:
    """SQL of the text of `parts` in order. Each choice is a CASE whose branches carry the rest of
    the parts, so that the literal text around a value folded into the line (a null, a label's
    word) is one literal with its neighbours, and a row's text is as few concatenations as its
    values need. A condition in `decided` (known true or false on the way) is not asked again."""
    for index, part in enumerate(parts):
        if not isinstance(part, _Choice):
            continue
        head, rest = parts[:index], parts[index + 1 :]
        asked = []
        for condition, branch in part.cases:
            if decided.get(condition) is True:
                return _concatenation([*head, *branch, *rest], decided)
            if decided.get(condition) is None:
                asked.append((condition, branch))
        otherwise = _concatenation(
            [*head, *part.otherwise, *rest], {**decided, **dict.fromkeys((c for c, _ in asked), False)}
        )
        if not asked:
            return otherwise
        whens = " ".join(
            f"WHEN {condition} THEN {_concatenation([*head, *branch, *rest], {**decided, condition: True})}"
            for condition, branch in asked
        )
        return f"CASE {whens} ELSE {otherwise} END"
    pieces: list[str] = []
    text = ""
    for part in parts:
        if isinstance(part, str):
            text += part
        elif isinstance(part, _Sql):  # no choice is left here
            if text:
                pieces.append(literal(text))
                text = ""
            pieces.append(part.expression)
    if text:
        pieces.append(literal(text))
    # || of text, not concat(): concat() looks up and calls each argument's output function for
    # every row, || joins the two texts as they are.
    return " || ".join(pieces) if pieces else "''"


def label_lines_sql(
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    scheme: str | None,
    *,
    upper_id: int | None = None,
    typing_flags: bool = False,
    annotators: bool = True,
) -> tuple[str, Sequence[Any]]:
    """(sql, params) of the SELECT of every line of `labels.jsonl` (each with its newline), in file
    order: `jsonl_line` of each row `label_rows` gives, made by PostgreSQL from the labels and the
    tables `_fill_worker_facts` / `_fill_typing_flags` filled (with `typing_flags`; the worker
    table's tails written for the same value). `annotators`: whether any label of the file has one
    (False: no worker table is read). A line's cost is mostly its pieces, so the statement writes
    few (modeling/snapshots/README.md, "Label-level file")."""
    pairs_sql, pairs_params = (
        _snapshot_pairs(datasets, filters, upper_id)
        .order_by()
        .values(
            pair_pk=F("pk"),
            pair_name=F("pair_id"),
            premise_split=F("premise__split"),
            premise_genre_is_training=F("premise__genre__is_training"),
            pair_dataset_id=F("dataset_id"),
        )
        .query.sql_with_params()
    )
    labels_sql, labels_params = (
        ValidationLabel.objects.annotate(
            in_gold=Case(When(in_gold(), then=Value(True)), default=Value(False), output_field=BooleanField())
        )
        .order_by("pair_id", "position")
        .values(
            label_pair=F("pair_id"),
            label_position=F("position"),
            label_worker=F("worker_id"),
            label_word=F("label"),
            label_rating=F("ordinal"),
            label_seconds=F("seconds"),
            label_seconds_json=RawSQL(json_float(f'"{ValidationLabel._meta.db_table}"."seconds"'), ()),
            label_excluded=F("excluded"),
            label_counted=F("in_gold"),
        )
        .query.sql_with_params()
    )
    pair_part = (
        f"concat({literal(_key('pairID', first=True))}, {json_text('r.pair_name')}, {literal(_key('split'))}, "
        f"{json_text(file_sql(held_out_dataset_ids(datasets)))}, {literal(_key('position'))})"
    )
    author = f"l.label_position = {AUTHOR_POSITION}"
    worker = "w.worker_id IS NOT NULL"
    words = {stored: to_scheme(scheme, stored) for stored in (*SCHEME_STORED_LABELS, NO_GOLD)}
    # Three runs of the line, each one CASE over the values it folds in: one run for all would
    # write every combination of them, a statement many times longer for one concatenation less.
    runs: list[list[_Part]] = [
        [_Sql("p.pair_part")],
        [
            _either(
                author,
                [str(AUTHOR_POSITION) + _key("role") + json.dumps("author")],
                [_Sql("l.label_position::text"), _key("role") + json.dumps("validator")],
            ),
            _key("annotator"),
            _either(worker, [_Sql("w.annotator")], ["null"]),
        ],
        [
            _key("label"),
            _Choice(
                tuple((f"l.label_word = {literal(stored)}", (json.dumps(word),)) for stored, word in words.items()),
                (_Sql(json_text(in_scheme("l.label_word::text", scheme))),),
            ),
            _key("rating"),
            _either("l.label_rating IS NULL", ["null"], [_Sql("l.label_rating::text")]),
            _key("seconds"),
            _either("l.label_seconds IS NULL", ["null"], [_Sql("l.label_seconds_json")]),
            _key("excluded"),
            _either("l.label_excluded", [json.dumps(True)], [json.dumps(False)]),
            _key("counted"),
            _either("l.label_counted", [json.dumps(True)], [json.dumps(False)]),
            _key("catch_trials_seen"),
            _either(worker, [_Sql("w.tail")], [_no_worker_tail(typing_flags)]),
        ],
    ]
    if typing_flags:
        runs.append([_either(author, [_Sql("coalesce(t.flags, '[]')"), _LINE_END], ["[]" + _LINE_END])])
    # A file without annotators joins no worker table: every label has the no-worker pieces.
    decided = {} if annotators else {worker: False}
    line = " || ".join(_concatenation(run, decided) for run in runs)
    joins = f"LEFT JOIN pg_temp.{WORKERS_TABLE} AS w ON w.worker_id = l.label_worker" if annotators else ""
    if typing_flags:
        joins += f" LEFT JOIN pg_temp.{TYPING_TABLE} AS t ON t.pair_id = l.label_pair"
    # OFFSET 0 keeps each a subquery of its own, so the pairs' part is made once per pair (pulled up
    # into the line, it is made again for every label) and the seconds' JSON once per label. The
    # pairs' query is flattened into its subquery, so that the parallel workers that join and sort
    # the pairs make their parts too, while the leader reads the labels.
    sql = (
        f"SELECT {line} "
        f"FROM ({labels_sql} OFFSET 0) AS l "
        f"JOIN (SELECT r.pair_pk, {pair_part} AS pair_part FROM ({pairs_sql}) AS r ORDER BY r.pair_pk OFFSET 0) AS p "
        f"ON p.pair_pk = l.label_pair {joins} ORDER BY l.label_pair, l.label_position"
    )
    return sql, (*labels_params, *pairs_params)


class LineSink(HashingBytes):
    """HashingBytes for the rows of a binary COPY of one text field (LINE_COPY_OPTIONS): each row's
    bytes without its frame. The header and the end are looked for in the first and last messages
    only: a check more per row was a noticeable share of the file's time."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._started = False

    def _joined(self) -> bytes:
        rows = self._pending
        if rows and not self._started:
            self._started = True
            if not rows[0].startswith(BINARY_HEADER):
                raise ExportStreamError(f"a COPY without its header: {bytes(rows[0][:40])!r}")
            rows[0] = rows[0][len(BINARY_HEADER) :]
        if rows and rows[-1] == BINARY_END:
            rows.pop()
        self.rows += len(rows)
        return b"".join([row[_LINE_FRAME:] for row in rows])


def write_label_rows(
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    scheme: str | None,
    directory: Path,
    *,
    cursor: Any = None,
    upper_id: int | None = None,
) -> dict[str, Any]:
    """Write `labels.jsonl` into the snapshot's folder; its manifest entry (name, rows, bytes, sha256).
    The lines of `label_lines_sql` are streamed by one COPY on `cursor` (a psycopg2 cursor; the
    default connection's when None). `upper_id`: the highest pair id of the snapshot."""
    if cursor is None:
        with connection.cursor() as wrapper:
            return write_label_rows(datasets, filters, scheme, directory, cursor=wrapper.cursor, upper_id=upper_id)
    annotators = _fill_worker_facts(cursor, datasets, filters, upper_id)
    typing = filters.get(TYPING_FLAGS_FILTER)
    if typing:
        _fill_typing_flags(cursor, datasets, filters, upper_id)
    sql, params = label_lines_sql(
        datasets, filters, scheme, upper_id=upper_id, typing_flags=bool(typing), annotators=annotators > 0
    )
    sink = LineSink(directory / LABELS_FILE)
    try:
        cursor.copy_expert(f"COPY ({cursor.mogrify(sql, params).decode()}) TO STDOUT ({LINE_COPY_OPTIONS})", sink)
    finally:
        sink.close()
    cursor.execute(f"DROP TABLE IF EXISTS pg_temp.{WORKERS_TABLE}, pg_temp.{TYPING_TABLE}")
    return sink.entry("")
