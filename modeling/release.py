"""A release a downstream user can load (issue 42.4): Parquet per split and a Hugging Face dataset card.

`make_release(snapshot, folder)` reads a finished snapshot's files (verified against its manifest,
never the database, so the rows are the JSONL export's) and writes, ready to push to the Hub:

    pairs/<split>.parquet     one row per pair, the snapshot's JSONL keys as columns
    labels/<split>.parquet    one row per label (when the snapshot has labels.jsonl)
    README.md                 the dataset card: the Hub's YAML header (configs, features, splits,
                              license, task ids) and a datasheet filled from the platform's records
                              (modeling/datasheet.py)

Same snapshot content, same bytes: the Parquet files are written with fixed options (one row
group, zstd, no pandas metadata) and the card holds no clock time, only dates found in the data.
No upload: the card says how (`huggingface-cli upload`).
"""

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from annotation_site.long_tasks import JobStatus

from .datasheet import datasheet_markdown, datasheet_records
from .models import Snapshot
from .snapshots.format import LABELS_FILE, manifest_files, verify_snapshot

PAIRS_CONFIG, LABELS_CONFIG = "pairs", "labels"
# Columns whose type is not text; every other snapshot key is a string.
PAIR_TYPES: dict[str, pa.DataType] = {"annotator_labels": pa.list_(pa.string()), "aggregated_posterior": pa.float64()}
LABEL_TYPES: dict[str, pa.DataType] = {
    "position": pa.int64(),
    "rating": pa.int64(),
    "seconds": pa.float64(),
    "excluded": pa.bool_(),
    "counted": pa.bool_(),
    "catch_trials_seen": pa.int64(),
    "catch_trials_matched": pa.int64(),
    "flags": pa.list_(pa.string()),
}
# The Hub's names for these types in a card's `features`.
HUB_DTYPES = {pa.string(): "string", pa.int64(): "int64", pa.float64(): "float64", pa.bool_(): "bool"}


class ReleaseError(Exception):
    """A release that cannot be made (the snapshot is not finished, or its files are not its own)."""


def _rows(path: Path) -> Iterable[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _schema(columns: Sequence[str], types: Mapping[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, types.get(name, pa.string())) for name in columns])


def _write_parquet(rows: list[dict[str, Any]], schema: pa.Schema, path: Path) -> None:
    """One deterministic file: fixed compression, one row group, no pandas metadata, no clock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(
        table,
        path,
        compression="zstd",
        row_group_size=max(1, len(rows)),
        use_dictionary=True,
        write_statistics=True,
        store_schema=False,
    )


def _feature(field: pa.Field) -> dict[str, Any]:
    if pa.types.is_list(field.type):
        return {"name": field.name, "list": HUB_DTYPES[field.type.value_type]}
    return {"name": field.name, "dtype": HUB_DTYPES[field.type]}


def _config(name: str, schema: pa.Schema, splits: Mapping[str, int], *, default: bool) -> tuple[dict, dict]:
    """(the `configs` entry, the `dataset_info` entry) of one configuration."""
    config: dict[str, Any] = {
        "config_name": name,
        "data_files": [{"split": split, "path": f"{name}/{split}.parquet"} for split in splits],
    }
    if default:
        config["default"] = True
    info = {
        "config_name": name,
        "features": [_feature(field) for field in schema],
        "splits": [{"name": split, "num_examples": rows} for split, rows in splits.items()],
    }
    return config, info


def _pair_files(folder: Path, manifest: Mapping[str, Any]) -> dict[str, Path]:
    """{split: its JSONL file} of the snapshot's pair files, in the manifest's order."""
    return {
        entry["split"]: folder / entry["name"]
        for entry in manifest["files"]
        if entry.get("split") and entry["name"].endswith(".jsonl")
    }


def make_release(snapshot: Snapshot, out: str | Path, *, license_id: str = "cc-by-sa-4.0") -> dict[str, Any]:
    """Write the release of a finished snapshot into `out` (created; must be empty). Returns
    {"files": {relative path: bytes}, "splits": {config: {split: rows}}}."""
    if snapshot.status != JobStatus.DONE or not snapshot.directory:
        raise ReleaseError(f"snapshot {snapshot.pk} is {snapshot.status}; release a finished snapshot")
    folder = Path(snapshot.directory)
    manifest = verify_snapshot(folder, snapshot.content_hash)
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"{out} is not empty; choose a new folder so no older file is mixed in")
    out.mkdir(parents=True, exist_ok=True)

    splits: dict[str, dict[str, int]] = {}
    schemas: dict[str, pa.Schema] = {}
    pair_rows: dict[str, list[dict[str, Any]]] = {}
    for split, path in _pair_files(folder, manifest).items():
        pair_rows[split] = list(_rows(path))
    columns = next((list(rows[0]) for rows in pair_rows.values() if rows), ["pairID"])
    schemas[PAIRS_CONFIG] = _schema(columns, PAIR_TYPES)
    splits[PAIRS_CONFIG] = {}
    for split, rows in pair_rows.items():
        _write_parquet(rows, schemas[PAIRS_CONFIG], out / PAIRS_CONFIG / f"{split}.parquet")
        splits[PAIRS_CONFIG][split] = len(rows)

    if LABELS_FILE in manifest_files(manifest):
        by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in _rows(folder / LABELS_FILE):
            by_split[row["split"]].append(row)
        label_columns = next((list(rows[0]) for rows in by_split.values() if rows), ["pairID"])
        schemas[LABELS_CONFIG] = _schema(label_columns, LABEL_TYPES)
        splits[LABELS_CONFIG] = {}
        for split in pair_rows:  # the pairs' split order; a split without labels gets an empty file
            _write_parquet(by_split.get(split, []), schemas[LABELS_CONFIG], out / LABELS_CONFIG / f"{split}.parquet")
            splits[LABELS_CONFIG][split] = len(by_split.get(split, []))

    records = datasheet_records(snapshot, manifest, pair_rows)
    (out / "README.md").write_text(
        card(manifest, splits, schemas, records, license_id=license_id), encoding="utf-8", newline="\n"
    )
    files = {str(path.relative_to(out)): path.stat().st_size for path in sorted(out.rglob("*")) if path.is_file()}
    return {"files": files, "splits": splits}


def card(
    manifest: Mapping[str, Any],
    splits: Mapping[str, Mapping[str, int]],
    schemas: Mapping[str, pa.Schema],
    records: Mapping[str, Any],
    *,
    license_id: str,
) -> str:
    """The dataset card: the Hub's YAML header, then the datasheet."""
    configs, infos = [], []
    for name in (PAIRS_CONFIG, LABELS_CONFIG):
        if name in splits:
            config, info = _config(name, schemas[name], splits[name], default=name == PAIRS_CONFIG)
            configs.append(config)
            infos.append(info)
    total = sum(splits[PAIRS_CONFIG].values())
    header = {
        "license": license_id,
        "language": ["en"],
        "task_categories": ["text-classification"],
        "task_ids": ["natural-language-inference"],
        "pretty_name": records["title"],
        "size_categories": [_size_category(total)],
        "configs": configs,
        "dataset_info": infos,
    }
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{front}---\n\n{datasheet_markdown(records, manifest, splits)}"


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return name
    return "1M<n<10M"
