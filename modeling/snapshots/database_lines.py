"""The export's file lines built by PostgreSQL and streamed by one `COPY … TO STDOUT`
(building them in Python was most of an export).

`export_lines_sql` is ONE statement over the pairs `selectors.pairs_for_export` chooses (the ORM's
filters, compiled) giving, per pair in pair order, its file name, JSONL line and TSV line: byte for
byte what `format.jsonl_line` and `format.tsv_line` make of `writer.export_record`'s record
(tests/modeling/test_export_sql_lines.py pins the two). The SQL is generated from the Python
definitions wherever one exists (keys, columns, quoted characters, the scheme's words); JSON strings
are `to_json`, which escapes as json.dumps(ensure_ascii=False) does. The pairs' own text and their
counted labels (from the table the label table's triggers keep) are made where parallel workers can
make them; each pair's genre and dataset are looked up above.
"""

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import F, QuerySet

from corpus import labels as scheme_labels
from corpus.models import LABELS_PER_PAIR, NO_GOLD, Dataset, Genre, Pair, Split

from .format import JSONL_KEYS, TRAIN_SPLIT, TSV_COLUMNS, TSV_QUOTE, TSV_QUOTED_CHARACTERS

# The COPY's own framing: PostgreSQL's binary format, every field its length and its bytes as they
# are, so the database neither scans the lines it made for characters to quote nor quotes them
# (writer.ExportFiles and label_rows.LineSink read the frames).
COPY_OPTIONS = "FORMAT binary"
# Filled before the COPY when a snapshot has an aggregation run (services): pair id, the run's
# label, and the posterior as JSON and as a TSV field, both formatted by Python (a float's repr).
AGGREGATED_TABLE = "snapshot_export_aggregated"
AGGREGATED_COLUMNS = ("pair_id", "label", "posterior_json", "posterior_tsv")


def literal(text: str) -> str:
    """A SQL string literal of `text` (the statement's own constants, never user input)."""
    if "%" in text:  # the statement goes through parameter formatting, where % starts a parameter
        raise ValueError(f"a literal of the export's statement may not hold %: {text!r}")
    if all(" " <= character <= "~" and character != "\\" for character in text):
        return "'" + text.replace("'", "''") + "'"
    return "E'" + "".join(_escaped(character) for character in text) + "'"


def _escaped(character: str) -> str:
    if " " <= character <= "~" and character not in "\\'":
        return character
    return f"\\x{ord(character):02x}" if ord(character) < 0x80 else character


def json_text(expression: str) -> str:
    """The JSON of a text value, null for NULL (json.dumps of a str or None)."""
    return f"coalesce(to_json(({expression})::text)::text, 'null')"


def json_float(expression: str) -> str:
    """The JSON of a float8 value as json.dumps writes a Python float (its repr), null for NULL.

    PostgreSQL's float8 text (extra_float_digits 1, the default) has the same shortest digits and
    the same exponent form as repr; they differ where repr writes fixed notation and PostgreSQL
    does not (from 1e15 to 1e16) and in repr's ".0" after a whole number. NaN and the infinities
    print as json.dumps writes them."""
    value = f"({expression})::float8"
    text = f"{value}::text"
    # From 1e15 to 1e16 PostgreSQL writes d.ddde+15: the digits, with the point moved 15 places.
    digits = f"replace(split_part(ltrim({text}, '-'), 'e', 1), '.', '')"
    sign = f"CASE WHEN {value} < 0 THEN '-' ELSE '' END"
    e15 = (
        f"{sign} || CASE WHEN length({digits}) <= 16 THEN rpad({digits}, 16, '0') || '.0' "
        f"ELSE left({digits}, 16) || '.' || substr({digits}, 17) END"
    )
    # From 1e16 on (whole numbers all) PostgreSQL may write more digits than the fewest that read
    # back as the same value (every digit of an integer below 2**64; 9.999999999999999e+22 for
    # 1e+23), where repr writes the fewest: found by rounding, in a subquery only such values run.
    whole = f"trunc(abs({text}::numeric))"
    candidates = f"SELECT k, round({whole}, k - length({whole}::text)) AS c FROM generate_series(1, 17) AS k"
    # The fewest digits, in repr's exponent form (d.ddde+XX). A candidate past the largest float8
    # would be an error, not a value that reads back.
    large = (
        f"{sign} || (SELECT left(t, 1) || CASE WHEN length(rtrim(t, '0')) > 1 THEN '.' || substr(rtrim(t, '0'), 2) "
        f"ELSE '' END || 'e+' || CASE WHEN length(t) <= 10 THEN '0' ELSE '' END || (length(t) - 1)::text "
        f"FROM (SELECT c::text AS t FROM ({candidates}) AS candidates "
        f"WHERE c <= 1.7976931348623157e308 AND c::float8 = abs({value}) ORDER BY k LIMIT 1) AS fewest)"
    )
    return (
        f"CASE WHEN {value} IS NULL THEN 'null' "
        f"WHEN {value} IN ('NaN', 'Infinity', '-Infinity') THEN {text} "
        f"WHEN abs({value}) >= 1e16 THEN {large} "
        f"WHEN abs({value}) < 1e-4 AND {value} <> 0 THEN {text} "
        f"WHEN abs({value}) >= 1e15 THEN {e15} "
        f"WHEN {value} = trunc({value}) THEN {text} || '.0' "
        f"ELSE {text} END"
    )


def tsv_field(expression: str) -> str:
    """A TSV field as csv.writer(QUOTE_MINIMAL) writes it: quoted, its quotes doubled, when it holds
    a character this Python's csv quotes for; NULL is the empty field (csv writes None as "")."""
    value = f"({expression})::text"
    holds = " OR ".join(f"strpos({value}, {literal(c)}) > 0" for c in sorted(TSV_QUOTED_CHARACTERS))
    quote = literal(TSV_QUOTE)
    doubled = f"{quote} || replace({value}, {quote}, {literal(TSV_QUOTE * 2)}) || {quote}"
    return f"coalesce(CASE WHEN {holds} THEN {doubled} ELSE {value} END, '')"


def in_scheme(expression: str, scheme: str | None) -> str:
    """A stored core label (or '-') in the scheme's words, as corpus.labels.to_scheme says."""
    renamed = _renamed(scheme)
    if not renamed:
        return expression
    cases = " ".join(f"WHEN {literal(stored)} THEN {literal(word)}" for stored, word in renamed.items())
    return f"CASE {expression} {cases} ELSE {expression} END"


def _renamed(scheme: str | None) -> dict[str, str]:
    return {
        stored: word for stored in scheme_labels.LABELS if (word := scheme_labels.to_scheme(scheme, stored)) != stored
    }


_TAB = "E'\\t'"


# Each pair's counted labels in their TSV slots (corpus migration 0038: kept by triggers on the label
# table, by the rule `selectors.counted_label_slots` writes): the slots' stored labels and ratings.
COUNTED_TABLE = "collection_pair_counted_labels"
_COUNTED = "counted"


def _slot_word(scheme: str | None, slot: int) -> str:
    """A slot's word in the scheme, as `selectors.labels_in_scheme` writes a label (ordinal datasets
    write the rating); NULL where the slot is blank."""
    word = in_scheme(f"{_COUNTED}.slot_labels[{slot}]", scheme)
    if scheme == scheme_labels.ORDINAL_SCHEME:
        rating = f"{_COUNTED}.slot_ratings[{slot}]"
        return f"CASE WHEN {rating} IS NOT NULL THEN {rating}::text ELSE {word} END"
    return word


def counted_labels_sql(scheme: str | None) -> tuple[str, str]:
    """SQL of the JSON list's items and of the five TSV label fields of the pair joined as `counted`
    (COUNTED_TABLE; none joined: no label counts). Each slot's label is written as `selectors.
    counted_label_slots` places it: the list holds the filled slots in order, a blank slot is an
    empty TSV field. The scheme's words are written from literals, a comparison per label."""
    words = _counted_words(scheme)
    json_words = {word: json.dumps(word, ensure_ascii=False) for word in words}
    plain_words = {word: word for word in words if not set(word) & set(TSV_QUOTED_CHARACTERS)}
    items, fields = [], []
    for slot in range(1, LABELS_PER_PAIR + 1):
        word = _slot_word(scheme, slot)
        blank = f"{_COUNTED}.slot_labels[{slot}] IS NULL"
        # A blank slot is NULL, which concat_ws leaves out of the list.
        items.append(f"CASE WHEN {blank} THEN NULL ELSE {_from_literals(word, json_words, json_text(word))} END")
        fields.append(f"CASE WHEN {blank} THEN '' ELSE {_from_literals(word, plain_words, tsv_field(word))} END")
    return f"concat_ws(', ', {', '.join(items)})", f"concat({f', {_TAB}, '.join(fields)})"


def _counted_words(scheme: str | None) -> list[str]:
    """The words a counted label can be written with in the scheme (`_slot_word`)."""
    words = {scheme_labels.to_scheme(scheme, stored) for stored in (*scheme_labels.LABELS, NO_GOLD)}
    if scheme == scheme_labels.ORDINAL_SCHEME:
        words |= {str(value) for value in scheme_labels.ORDINAL_VALUES}
    return sorted(words)


def _from_literals(expression: str, known: dict[str, str], otherwise: str) -> str:
    """`otherwise` (SQL of a text made from `expression`), given as a literal for the values `known` names."""
    cases = " ".join(f"WHEN {literal(value)} THEN {literal(text)}" for value, text in known.items())
    return f"CASE {expression} {cases} ELSE {otherwise} END" if cases else otherwise


# The pair's values the lines are made of, by the name the statement gives them.
_VALUES = {
    "pair_pk": F("pk"),
    "pair_dataset_id": F("dataset_id"),
    "pair_name": F("pair_id"),
    "pair_hypothesis": F("hypothesis"),
    "pair_parse": F("parse"),
    "pair_binary_parse": F("binary_parse"),
    "pair_author_label": F("author_label"),
    "pair_needs_validation": F("needs_validation"),
    "pair_label_count": F("label_count"),
    "pair_gold": F("gold_label"),
    "premise_prompt_id": F("premise__prompt_id"),
    "premise_text": F("premise__text"),
    "premise_parse": F("premise__parse"),
    "premise_binary_parse": F("premise__binary_parse"),
    "premise_split": F("premise__split"),
    "premise_genre_id": F("premise__genre_id"),
}
# The record's fields (writer.export_record) as columns of the statement, "labels" aside.
_RECORD = {
    "pairID": "r.pair_name",
    "promptID": "r.premise_prompt_id",
    "sentence1": "r.premise_text",
    "sentence1_binary_parse": "r.premise_binary_parse",
    "sentence1_parse": "r.premise_parse",
    "sentence2": "r.pair_hypothesis",
    "sentence2_binary_parse": "r.pair_binary_parse",
    "sentence2_parse": "r.pair_parse",
}
# The record's fields read from a small table the statement's top looks up (under the field's name),
# where each row's JSON and TSV text are made once per row of that table, not once per pair.
_LOOKED_UP = ("genre", "dataset")
LABEL_COLUMNS = tuple(f"label{slot}" for slot in range(1, LABELS_PER_PAIR + 1))


def gold_sql(unvalidated_gold: str, scheme: str | None) -> str:
    """The row's gold label in the scheme's words, with the unvalidated_gold convention applied as
    writer.export_record applies it."""
    gold = "r.pair_gold"
    if unvalidated_gold in ("author", "author-all"):
        condition = f"r.pair_gold = {literal(NO_GOLD)} AND NOT r.pair_needs_validation AND r.pair_label_count <= 1"
        if unvalidated_gold == "author":
            condition += f" AND r.premise_split = {literal(Split.TRAIN)}"
        gold = f"CASE WHEN {condition} THEN r.pair_author_label ELSE r.pair_gold END"
    return in_scheme(f"({gold})::text", scheme)


def file_sql(
    held_out_dataset_ids: Collection[int],
    *,
    split: str = "r.premise_split",
    dataset_id: str = "r.pair_dataset_id",
    is_training: str = "r.premise_genre_is_training",
) -> str:
    """The row's file (format.file_split) from the SQL of its premise's split, its dataset's id and
    whether its genre is a training genre: dev/test of a dataset with held-out genres are matched or
    mismatched by the genre."""
    if not held_out_dataset_ids:
        return f"{split}::text"
    ids = ", ".join(str(int(pk)) for pk in sorted(held_out_dataset_ids))
    plain = f"{split} = {literal(TRAIN_SPLIT)} OR {dataset_id} NOT IN ({ids})"
    return (
        f"CASE WHEN {plain} THEN {split}::text "
        f"WHEN {is_training} THEN {split} || {literal('_matched')} "
        f"ELSE {split} || {literal('_mismatched')} END"
    )


@dataclass(frozen=True)
class Joined:
    """A piece of a line made at the statement's top, from what is joined to each pair there (its
    genre's and dataset's text, its aggregated label), not from the pair's own row."""

    sql: str


Piece = str | Joined
# The name the statement's top gives a pair's aggregated label.
_AGGREGATED = "aggregated"


def export_lines_sql(
    pairs: QuerySet[Pair],
    *,
    scheme: str | None,
    unvalidated_gold: str,
    held_out_dataset_ids: Collection[int],
    aggregated: bool = False,
) -> tuple[str, Sequence[Any]]:
    """(sql, params) of the SELECT of (file, JSONL line, TSV line) of every pair of `pairs` (a
    `pairs_for_export` queryset, already capped at the export's highest id), in pair order.
    `aggregated`: the rows gain the aggregation run's two fields from AGGREGATED_TABLE.

    Two levels: a subquery makes the pair's own fields and its counted labels (COUNTED_TABLE, joined
    by pair) into runs of line text, and PostgreSQL may run it in parallel workers (the JSON
    escaping and the TSV quoting are most of the statement's work). Above it, in pair order, its
    genre's and dataset's text and its aggregated label are joined, and each line is its runs and
    those pieces concatenated."""
    inner, params = pairs.order_by().values(**_VALUES).query.sql_with_params()
    json_labels, tsv_labels = counted_labels_sql(scheme)
    json_values: dict[str, list[Piece]] = {
        "annotator_labels": ["'['", json_labels, "']'"],
        "gold_label": [json_text(gold_sql(unvalidated_gold, scheme))],
        **{key: [json_text(column)] for key, column in _RECORD.items()},
        **{key: [Joined(f"{key}.json")] for key in _LOOKED_UP},
    }
    if set(json_values) != set(JSONL_KEYS):
        raise RuntimeError("the SQL lines do not write format.JSONL_KEYS; say how each key is made")
    fields = [(key, json_values[key]) for key in JSONL_KEYS]
    tsv: list[Piece] = [
        _tsv_column(column, unvalidated_gold, scheme, tsv_labels)
        for column in TSV_COLUMNS
        if column not in LABEL_COLUMNS[1:]
    ]
    if aggregated:
        fields += [
            ("aggregated_label", [Joined(json_text(f"coalesce({_AGGREGATED}.label, '')"))]),
            ("aggregated_posterior", [Joined(f"coalesce({_AGGREGATED}.posterior_json, 'null')")]),
        ]
        tsv += [Joined(tsv_field(f"coalesce({_AGGREGATED}.label, '')")), Joined(f"{_AGGREGATED}.posterior_tsv")]
    jsonl: list[Piece] = []
    for index, (key, value) in enumerate(fields):
        jsonl += [literal(("{" if index == 0 else ", ") + json.dumps(key) + ": "), *value]
    tsv_parts: list[Piece] = [part for field in tsv for part in (_TAB, field)][1:]
    runs: list[str] = []
    json_line = _joined_line([*jsonl, literal(chr(125) + chr(10))], runs)
    tsv_line = _joined_line([*tsv_parts, literal(chr(10))], runs)
    run_columns = "".join(f", {run} AS run{number}" for number, run in enumerate(runs))
    slug = f"{json_text('slug')} AS json, {tsv_field('slug')} AS tsv"
    # Looked up per pair, not joined: PostgreSQL remembers each genre's and dataset's row (Memoize),
    # their text made once (OFFSET 0 keeps it from being pulled up into every pair's line), and the
    # pairs stay in their order (a hash join would not keep it).
    joins = (
        f"CROSS JOIN LATERAL (SELECT is_training, {slug} FROM {Genre._meta.db_table} "
        f"WHERE id = lines.premise_genre_id OFFSET 0) AS genre "
        f"CROSS JOIN LATERAL (SELECT {slug} FROM {Dataset._meta.db_table} "
        f"WHERE id = lines.pair_dataset_id OFFSET 0) AS dataset"
    )
    if aggregated:
        joins += f" LEFT JOIN pg_temp.{AGGREGATED_TABLE} AS {_AGGREGATED} ON {_AGGREGATED}.pair_id = lines.pair_pk"
    file = file_sql(
        held_out_dataset_ids,
        split="lines.premise_split",
        dataset_id="lines.pair_dataset_id",
        is_training="genre.is_training",
    )
    sql = (
        f"SELECT {file}, {json_line}, {tsv_line} FROM ("
        f"SELECT r.pair_pk, r.pair_dataset_id, r.premise_genre_id, r.premise_split{run_columns} "
        # OFFSET 0 plans the runs' subquery on its own, where its projection can go to the parallel
        # workers; the lookups above it are made once per genre and dataset, in the leader.
        f"FROM ({inner}) AS r LEFT JOIN {COUNTED_TABLE} AS {_COUNTED} ON {_COUNTED}.pair_pk = r.pair_pk "
        f"ORDER BY r.pair_pk OFFSET 0) AS lines {joins} ORDER BY lines.pair_pk"
    )
    return sql, params


def _joined_line(pieces: Sequence[Piece], runs: list[str]) -> str:
    """The line of `pieces` as the top's concatenation: each run of the pair's own pieces becomes a
    column of the subquery (appended to `runs`, named by its index there), the joined pieces stay."""
    parts: list[str] = []
    run: list[str] = []
    for piece in [*pieces, None]:
        if isinstance(piece, str):
            run.append(piece)
            continue
        if run:
            # concat(), not a chain of ||: one string built per run, not one per piece (and NULL is
            # the empty string, as csv writes None).
            parts.append(f"lines.run{len(runs)}")
            runs.append(f"concat({', '.join(run)})")
            run = []
        if piece is not None:
            parts.append(piece.sql)
    return f"concat({', '.join(parts)})"


def _tsv_column(column: str, unvalidated_gold: str, scheme: str | None, labels: str) -> Piece:
    """One TSV column of format.TSV_COLUMNS as SQL; label1 stands for the five label fields (`labels`)."""
    if column == "gold_label":
        return tsv_field(gold_sql(unvalidated_gold, scheme))
    if column in _RECORD:
        return tsv_field(_RECORD[column])
    if column in _LOOKED_UP:
        return Joined(f"{column}.tsv")
    if column == LABEL_COLUMNS[0] and TSV_COLUMNS[-LABELS_PER_PAIR:] == LABEL_COLUMNS:
        return labels
    raise RuntimeError(f"the SQL lines do not write the TSV column {column!r}; say how it is made")
