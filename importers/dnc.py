"""The Diverse NLI Collection (DNC, Poliak et al. 2018): its JSON files, label schemes and writer; pure Python.

File format, label schemes and the decisions behind byte-exact writing: docs/dnc.md.
"""

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from base.json_errors import json_error_text

ENTAILED, NOT_ENTAILED = "entailed", "not-entailed"
ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
TWO_WAY_LABELS = (ENTAILED, NOT_ENTAILED)
THREE_WAY_LABELS = (CONTRADICTION, NEUTRAL, ENTAILMENT)  # the order of function_words' label-set
ORDINAL_SCALE = {5: "very likely", 4: "likely", 3: "plausible", 2: "technically possible", 1: "impossible"}

TWO_WAY, THREE_WAY, ORDINAL = "two-way", "three-way", "ordinal"

# The key order of the released files (sorted, as json.dump(sort_keys=True) wrote them): new pairs use it.
DATA_KEYS = ("binary-label", "context", "hypothesis", "label", "label-set", "pair-id", "split", "type-of-inference")
METADATA_KEYS = ("corpus", "corpus-license", "corpus-sent-id", "creation-approach", "misc", "pair-id")

_DATA_ATTRIBUTES = {
    "binary-label": "binary_label",
    "context": "context",
    "hypothesis": "hypothesis",
    "label": "label",
    "label-set": "label_set",
    "pair-id": "pair_id",
    "split": "split",
    "type-of-inference": "type_of_inference",
}
_METADATA_ATTRIBUTES = {
    "corpus": "corpus",
    "corpus-license": "corpus_license",
    "corpus-sent-id": "corpus_sent_id",
    "creation-approach": "creation_approach",
    "misc": "misc",
}
_REQUIRED_METADATA = ("pair-id", "corpus", "corpus-sent-id", "creation-approach")


class DncFormatError(ValueError):
    """A DNC file (or a data/metadata pair of files) that cannot be read; the message says where."""


@dataclass
class Provenance:
    corpus: str
    corpus_sent_id: object  # text, or an int (factuality)
    corpus_license: object = None
    creation_approach: str = "automatic"
    misc: object = None  # null or a JSON object
    extra: dict[str, Any] = field(default_factory=dict)  # fields this module does not know, e.g. corpus-split
    keys: tuple[str, ...] = METADATA_KEYS  # the record's key order, for writing it back as read


@dataclass
class DncPair:
    pair_id: int
    context: str
    hypothesis: str
    label: object  # "entailed" / "not-entailed", 1..5, or "entailment" / "neutral" / "contradiction"
    label_set: object  # list of labels, or None
    binary_label: bool
    split: str
    type_of_inference: str
    provenance: Provenance | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # fields this module does not know, e.g. annotations
    keys: tuple[str, ...] = DATA_KEYS

    @property
    def label_scheme(self) -> str:
        return label_scheme(self.label)

    @property
    def three_way_label(self) -> object:
        return three_way_label(self.label)


@dataclass(frozen=True)
class JsonStyle:
    """How a file's JSON was laid out, so that writing can lay it out the same way."""

    item_separator: str = ", "
    ensure_ascii: bool = True
    indent: int = 4
    final_newline: bool = False


PYTHON2_STYLE = JsonStyle(item_separator=", ", ensure_ascii=True)  # DNC's recast_* files
PYTHON3_STYLE = JsonStyle(item_separator=",", ensure_ascii=False)  # function_words/NLI/*


@dataclass
class DncFile:
    data_path: str
    metadata_path: str | None  # None when the dataset has no metadata file
    pairs: list[DncPair]
    data_style: JsonStyle
    metadata_style: JsonStyle | None  # None without metadata


# --- label schemes ---------------------------------------------------------------------------


def _is_score(label: object) -> bool:
    return isinstance(label, int) and not isinstance(label, bool) and label in ORDINAL_SCALE


def label_scheme(label: object) -> str:
    if label in TWO_WAY_LABELS:
        return TWO_WAY
    if label in THREE_WAY_LABELS:
        return THREE_WAY
    if _is_score(label):
        return ORDINAL
    raise ValueError(f"{label!r} is not a DNC label")


def two_way_label(label: object) -> object:
    """entailed / not-entailed for any DNC label (ordinal: 5 is entailed, 1-4 are not)."""
    scheme = label_scheme(label)
    if scheme == TWO_WAY:
        return label
    if scheme == THREE_WAY:
        return ENTAILED if label == ENTAILMENT else NOT_ENTAILED
    return ENTAILED if label == 5 else NOT_ENTAILED


def three_way_label(label: object) -> object:
    """entailment / neutral / contradiction, or None for a two-way label (not-entailed cannot be split)."""
    scheme = label_scheme(label)
    if scheme == THREE_WAY:
        return label
    if scheme == ORDINAL:
        return ENTAILMENT if label == 5 else CONTRADICTION if label == 1 else NEUTRAL
    return None


def is_entailed(label: object) -> bool:
    """What DNC's binary-label says for this label."""
    return two_way_label(label) == ENTAILED


# --- reading ---------------------------------------------------------------------------------


def detect_style(text: str) -> JsonStyle:
    """The JsonStyle of a DNC file's text (see the module docstring)."""
    lines = text.split("\n", 2)
    indent = len(lines[1]) - len(lines[1].lstrip(" ")) if len(lines) > 1 else 4
    return JsonStyle(
        item_separator=", " if ", \n" in text else ",",
        # Without non-ASCII characters both settings write the same bytes; with them, they were kept.
        ensure_ascii=text.isascii(),
        indent=indent or 4,
        final_newline=text.endswith("\n"),
    )


def read_json_records(path: str | Path) -> tuple[list[dict[str, Any]], JsonStyle]:
    """The array of objects in a DNC file, and the file's JsonStyle."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        records = json.loads(text)
    except json.JSONDecodeError as error:
        raise DncFormatError(f"{path}: not valid JSON ({json_error_text(error)})") from None
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records):
        raise DncFormatError(f"{path}: a JSON array of objects was expected")
    return records, detect_style(text)


def _check_types(where: str, record: Mapping[str, Any]) -> None:
    expected: dict[str, type] = {
        "pair-id": int,
        "context": str,
        "hypothesis": str,
        "binary-label": bool,
        "split": str,
        "type-of-inference": str,
    }
    for key, kind in expected.items():
        value = record[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise DncFormatError(f"{where}: {key} should be {kind.__name__}, not {value!r}")
    try:
        label_scheme(record["label"])
    except ValueError as error:
        raise DncFormatError(f"{where}: {error}") from None
    label_set = record["label-set"]
    if label_set is not None and (not isinstance(label_set, list) or record["label"] not in label_set):
        raise DncFormatError(f"{where}: label {record['label']!r} is not in label-set {label_set!r}")


def pair_from_record(record: Mapping[str, Any], where: str = "record") -> DncPair:
    missing = [key for key in _DATA_ATTRIBUTES if key not in record]
    if missing:
        raise DncFormatError(f"{where} lacks {', '.join(missing)}")
    _check_types(where, record)
    values = {attribute: record[key] for key, attribute in _DATA_ATTRIBUTES.items()}
    extra = {key: value for key, value in record.items() if key not in _DATA_ATTRIBUTES}
    return DncPair(**values, extra=extra, keys=tuple(record))


def provenance_from_record(record: Mapping[str, Any], where: str = "metadata record") -> Provenance:
    missing = [key for key in _REQUIRED_METADATA if key not in record]
    if missing:
        raise DncFormatError(f"{where} lacks {', '.join(missing)}")
    values = {attribute: record[key] for key, attribute in _METADATA_ATTRIBUTES.items() if key in record}
    extra = {key: value for key, value in record.items() if key not in _METADATA_ATTRIBUTES and key != "pair-id"}
    return Provenance(**values, extra=extra, keys=tuple(record))


def metadata_path_for(data_path: str | Path) -> Path:
    """dev/recast_puns_data.json -> dev/recast_puns_metadata.json"""
    path = Path(data_path)
    if not path.name.endswith("_data.json"):
        raise ValueError(f"{path} is not a *_data.json file")
    return path.with_name(path.name[: -len("_data.json")] + "_metadata.json")


def _index_metadata(path: str | Path, records: Sequence[Mapping[str, Any]]) -> dict[int, Provenance]:
    by_pair_id: dict[int, Provenance] = {}
    for index, record in enumerate(records):
        where = f"{path}: record {index}"
        provenance = provenance_from_record(record, where)
        pair_id = record["pair-id"]
        if pair_id in by_pair_id:
            raise DncFormatError(f"{where}: pair-id {pair_id} appears twice")
        by_pair_id[pair_id] = provenance
    return by_pair_id


def _join(
    data_path: str | Path,
    pairs: Sequence[DncPair],
    metadata_path: str | Path,
    provenance_by_id: Mapping[int, Provenance],
) -> None:
    without = [pair.pair_id for pair in pairs if pair.pair_id not in provenance_by_id]
    if without:
        raise DncFormatError(
            f"{data_path}: {len(without)} pair(s) have no record in {metadata_path} (first pair-id {without[0]})"
        )
    unused = set(provenance_by_id) - {pair.pair_id for pair in pairs}
    if unused:
        raise DncFormatError(
            f"{metadata_path}: {len(unused)} record(s) match no pair in {data_path} (e.g. pair-id {min(unused)})"
        )
    for pair in pairs:
        pair.provenance = provenance_by_id[pair.pair_id]


def read_dnc(data_path: str | Path, metadata_path: str | Path | None = None) -> DncFile:
    """A DNC dataset: its pairs with their provenance, and both files' JSON styles.

    metadata_path defaults to the sibling *_metadata.json; without one, provenance stays None.
    """
    records, data_style = read_json_records(data_path)
    pairs = [pair_from_record(record, f"{data_path}: record {index}") for index, record in enumerate(records)]
    seen = Counter(pair.pair_id for pair in pairs)
    repeated = [pair_id for pair_id, count in seen.items() if count > 1]
    if repeated:
        raise DncFormatError(f"{data_path}: pair-id {repeated[0]} appears {seen[repeated[0]]} times")
    if metadata_path is None:
        candidate = metadata_path_for(data_path)
        metadata_path = candidate if candidate.exists() else None
    metadata_style: JsonStyle | None = None
    if metadata_path is not None:
        metadata_records, metadata_style = read_json_records(metadata_path)
        _join(data_path, pairs, metadata_path, _index_metadata(metadata_path, metadata_records))
    return DncFile(
        str(data_path), str(metadata_path) if metadata_path is not None else None, pairs, data_style, metadata_style
    )


def find_dnc_files(root: str | Path) -> list[Path]:
    """Every *_data.json under root, sorted by path."""
    return sorted(Path(root).rglob("*_data.json"))


# --- writing ---------------------------------------------------------------------------------


def _ordered(keys: Iterable[str], values: Mapping[str, Any]) -> dict[str, Any]:
    """values as a dict in the record's own key order; keys it never had go last."""
    ordered = {key: values[key] for key in keys if key in values}
    ordered.update((key, value) for key, value in values.items() if key not in ordered)
    return ordered


def data_record(pair: DncPair) -> dict[str, Any]:
    values = {key: getattr(pair, attribute) for key, attribute in _DATA_ATTRIBUTES.items()}
    values.update(pair.extra)
    return _ordered(pair.keys, values)


def metadata_record(pair: DncPair) -> dict[str, Any]:
    provenance = pair.provenance
    if provenance is None:
        raise ValueError(f"pair {pair.pair_id} has no provenance to write")
    # A field the record never had (MegaVeridicality has no misc) stays out unless it was given a value.
    values = {
        key: getattr(provenance, attribute)
        for key, attribute in _METADATA_ATTRIBUTES.items()
        if key in provenance.keys or getattr(provenance, attribute) is not None
    }
    values.update(provenance.extra)
    values["pair-id"] = pair.pair_id
    return _ordered(provenance.keys, values)


def dumps_records(records: Sequence[Mapping[str, Any]], style: JsonStyle = PYTHON2_STYLE) -> str:
    text = json.dumps(
        records, indent=style.indent, separators=(style.item_separator, ": "), ensure_ascii=style.ensure_ascii
    )
    return text + "\n" if style.final_newline else text


def dumps_data(pairs: Iterable[DncPair], style: JsonStyle = PYTHON2_STYLE) -> str:
    return dumps_records([data_record(pair) for pair in pairs], style)


def dumps_metadata(pairs: Iterable[DncPair], style: JsonStyle = PYTHON2_STYLE) -> str:
    return dumps_records([metadata_record(pair) for pair in pairs], style)


def write_dnc(
    pairs: Iterable[DncPair],
    data_path: str | Path,
    metadata_path: str | Path | None = None,
    style: JsonStyle = PYTHON2_STYLE,
    metadata_style: JsonStyle | None = None,
) -> None:
    """Write the pairs as DNC data (and metadata, when a path is given) in the given JSON style."""
    pair_list = list(pairs)
    texts = {Path(data_path): dumps_data(pair_list, style)}
    if metadata_path is not None:
        texts[Path(metadata_path)] = dumps_metadata(pair_list, metadata_style or style)
    for path, text in texts.items():  # both rendered before either is written
        path.write_text(text, encoding="utf-8")
