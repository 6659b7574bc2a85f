"""The snapshot format, written once for the exporter and the training reader alike.

A snapshot folder holds one `.jsonl` and one `.tsv` per split file (TRAIN_SPLIT, EVALUATION_SPLITS) and a
`manifest.json` listing each file's rows, bytes and SHA-256, plus one content hash over them.
Plain Python on purpose (no Django, no torch): a GPU node reads and verifies a snapshot with
this module alone. Field-by-field decisions are in modeling/snapshots/README.md.
"""

import csv
import hashlib
import io
import json
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from corpus.labels import THREE_WAY_SCHEME, scheme_labels

FORMAT_NAME = "multinli-1.0"
MANIFEST_NAME = "manifest.json"
FORMATS = ("jsonl", "tsv")
CONTENT_HASH_RULE = "sha256 over lines '<name>\\t<sha256>\\n' of the data files sorted by name"

TRAIN_SPLIT = "train"
# Dev/test are split matched/mismatched when a dataset has held-out genres; plain otherwise (SNLI).
EVALUATION_SPLITS = ("dev_matched", "dev_mismatched", "test_matched", "test_mismatched", "dev", "test")
# The splits a run stops early on, the first a snapshot has (the training data and a node's results agree).
DEV_SPLITS_FOR_EARLY_STOPPING = ("dev_matched", "dev")
TRAIN_FILE = f"{TRAIN_SPLIT}.jsonl"

# MultiNLI 1.0's JSONL keys in its (alphabetical) order, then `dataset`, which MultiNLI does not have.
JSONL_KEYS = (
    "annotator_labels",
    "genre",
    "gold_label",
    "pairID",
    "promptID",
    "sentence1",
    "sentence1_binary_parse",
    "sentence1_parse",
    "sentence2",
    "sentence2_binary_parse",
    "sentence2_parse",
    "dataset",
)
# MultiNLI's TSV columns; label1 is the author's.
TSV_COLUMNS = (
    "gold_label",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
    "promptID",
    "pairID",
    "genre",
    "label1",
    "label2",
    "label3",
    "label4",
    "label5",
)


# One line of a split file: JSONL as json.dumps(ensure_ascii=False) writes it, TSV as csv.writer
# (QUOTE_MINIMAL) does, "\n" on every platform. database_lines.py is generated from these.
TSV_DELIMITER, TSV_QUOTE = "\t", '"'
_encode_json = json.JSONEncoder(ensure_ascii=False).encode  # one encoder: json.dumps builds one per call


def jsonl_line(record: Mapping[str, Any]) -> str:
    """A record as its JSONL line, newline included."""
    return _encode_json(record) + "\n"


def json_value(value: Any) -> str:
    """One value as jsonl_line writes it inside a record."""
    return _encode_json(value)


def tsv_line(fields: Sequence[Any]) -> str:
    """Fields as their TSV line, newline included (None is an empty field)."""
    buffer = io.StringIO()
    csv.writer(
        buffer, delimiter=TSV_DELIMITER, quotechar=TSV_QUOTE, quoting=csv.QUOTE_MINIMAL, lineterminator="\n"
    ).writerow(fields)
    return buffer.getvalue()


def tsv_value(value: Any) -> str:
    """One value as tsv_line writes it inside a line (a float: its repr)."""
    return tsv_line([value, ""])[: -len(TSV_DELIMITER + "\n")]


# The characters that make csv.writer quote a field, asked of this Python's csv (versions differ on
# a lone carriage return): what the database's lines must quote too.
TSV_QUOTED_CHARACTERS = frozenset(
    character for character in map(chr, range(1, 128)) if tsv_line([f"a{character}b", ""]).startswith(TSV_QUOTE)
)


class SnapshotError(Exception):
    """A snapshot folder that cannot be trusted: a missing file, a bad manifest, a hash mismatch."""


def file_split(split: str, is_training_genre: bool, has_held_out_genres: bool) -> str:
    """Which file a pair goes to: held-out genres make a dataset's dev/test matched vs mismatched."""
    if split == TRAIN_SPLIT or not has_held_out_genres:
        return split
    return f"{split}_{'matched' if is_training_genre else 'mismatched'}"


def sha256_of_file(path: str | Path, block: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(block), b""):
            digest.update(chunk)
    return digest.hexdigest()


def content_hash(files: Mapping[str, str | None] | Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 over the sorted '<name>\\t<sha256>\\n' lines of the data files (the manifest's
    list, or {name: sha256}); the manifest is not part of it."""
    if not isinstance(files, Mapping):
        files = {entry["name"]: entry["sha256"] for entry in files}
    digest = hashlib.sha256()
    for name, sha in sorted(files.items()):
        digest.update(f"{name}\t{sha}\n".encode())
    return digest.hexdigest()


def build_manifest(
    snapshot_id: int,
    datasets: Sequence[str],
    filters: Mapping[str, Any],
    rows: int,
    files: list[dict[str, Any]],
    label_scheme: str | None = None,
    gold_sources: dict[str, int] | None = None,
    stopping_rules: dict[str, dict[str, int]] | None = None,
    typing_evidence: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest (its keys: modeling/snapshots/README.md). An optional key is written only where it
    says something, so older manifests read as they did: `label_scheme` for two-way and ordinal
    snapshots (absent: three-way), `stopping_rules` where some pair is not on the fixed rule."""
    manifest = {
        "format": FORMAT_NAME,
        "snapshot": snapshot_id,
        "datasets": datasets,
        "filters": filters,
        "rows": rows,
        "files": files,
        "formats": list(FORMATS),
        "content_hash": content_hash(files),
        "content_hash_rule": CONTENT_HASH_RULE,
    }
    if gold_sources is not None:
        manifest["gold_sources"] = gold_sources
    if stopping_rules:
        manifest["stopping_rules"] = stopping_rules
    if typing_evidence is not None:
        manifest["typing_evidence"] = typing_evidence
    if label_scheme and label_scheme != THREE_WAY_SCHEME:
        manifest["label_scheme"] = label_scheme
        manifest["labels"] = list(scheme_labels(label_scheme))
    return manifest


def manifest_labels(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The labels a snapshot's gold_label takes, in class-index order (training's label set)."""
    return tuple(manifest.get("labels") or scheme_labels(manifest.get("label_scheme") or THREE_WAY_SCHEME))


def write_manifest(directory: str | Path, manifest: Mapping[str, Any]) -> None:
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    (Path(directory) / MANIFEST_NAME).write_text(text, encoding="utf-8")


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST_NAME
    if not path.exists():
        raise SnapshotError(f"{path} is missing")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{path} is not valid JSON: {exc}") from exc


def manifest_files(manifest: Mapping[str, Any]) -> dict[str, str | None]:
    """{file name: sha256} of the data files a manifest lists."""
    files = manifest.get("files") or []
    if isinstance(files, dict):
        listed = {name: info if isinstance(info, str) else (info or {}).get("sha256") for name, info in files.items()}
    else:
        listed = {(info or {}).get("name"): (info or {}).get("sha256") for info in files}
    return {name: sha for name, sha in listed.items() if name}


# The label-level file (modeling/snapshots/label_rows.py): JSONL too, but rows of labels, not pairs.
LABELS_FILE = "labels.jsonl"


def training_files(manifest: Mapping[str, Any]) -> dict[str, str | None]:
    """{name: sha256} of the files training reads (the JSONL ones of pairs); the TSV twins carry
    the same rows, and the label-level file holds labels, not pairs."""
    return {
        name: sha for name, sha in manifest_files(manifest).items() if name.endswith(".jsonl") and name != LABELS_FILE
    }


def verify_snapshot(
    directory: str | Path, expected_hash: str | None = None, names: Collection[str] | None = None
) -> dict[str, Any]:
    """Check every file of a snapshot folder against its manifest (an edited folder would give
    results that are not the run's snapshot's); return the manifest. `names` limits the files that
    must be present; the content hash still covers every file listed, so no listed hash was edited."""
    directory = Path(directory)
    if not directory.is_dir():
        raise SnapshotError(f"snapshot folder {directory} does not exist")
    manifest = read_manifest(directory)
    manifest_hash = manifest.get("content_hash")
    if expected_hash and manifest_hash and manifest_hash != expected_hash:
        raise SnapshotError(
            f"hash mismatch: the run names snapshot content {expected_hash[:12]}…, "
            f"{MANIFEST_NAME} says {manifest_hash[:12]}…"
        )
    files = manifest_files(manifest)
    if manifest_hash and all(files.values()) and content_hash(files) != manifest_hash:
        raise SnapshotError(f"hash mismatch: {MANIFEST_NAME}'s file list does not give its content_hash")
    for name, sha in files.items():
        if names is not None and name not in names:
            continue
        path = directory / name
        if not path.exists():
            raise SnapshotError(f"{name} is listed in {MANIFEST_NAME} but missing from {directory}")
        if sha and sha256_of_file(path) != sha:
            raise SnapshotError(f"hash mismatch: {name} does not match its sha256 in {MANIFEST_NAME}")
    if not (directory / TRAIN_FILE).exists():
        raise SnapshotError(f"{directory / TRAIN_FILE} is missing")
    return manifest
