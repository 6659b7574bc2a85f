"""A release a downstream user can load: Parquet per split and a Hugging Face dataset card.

`make_release(snapshot, folder)` writes the release of any done snapshot (training splits or
none, matched/mismatched evaluation files, label rows, typing flags) into a local folder;
`publish_release(snapshot, name)` writes it into the releases storage under `<name>/` (object
storage in production, so every host serves it). Layout:

    pairs/<split>.parquet     one row per pair, the snapshot's JSONL keys as columns
    labels/<split>.parquet    one row per label (when the snapshot has labels.jsonl)
    README.md                 the dataset card: the Hub's YAML header (configs naming every file,
                              features, splits) and the datasheet (modeling/datasheet.py)

Split names are the snapshot's file names everywhere, so `datasets.load_dataset(folder)` gives
exactly those splits. Every column has an explicit Arrow type (PAIR_TYPES, LABEL_TYPES; an unknown
column is refused rather than guessed), so the Parquet schema and the card's `features` agree.
Everything is read from the snapshot, never from the live database, with fixed Parquet options and
no clock time: the same snapshot gives the same bytes, today or later.
"""

import json
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from django.conf import settings
from django.core.files import File

from audit import services as audit
from audit.selectors import summary_for_datasets, teams_of_named
from base.file_storage import file_storage
from base.long_tasks import JobStatus
from corpus.models import Dataset

from .datasheet import SplitTally, card_title, datasheet_markdown
from .models import Snapshot
from .snapshots.files import materialised_snapshot
from .snapshots.format import (
    EVALUATION_SPLITS,
    LABELS_FILE,
    MANIFEST_NAME,
    TRAIN_SPLIT,
    SnapshotError,
    content_hash,
    manifest_files,
    sha256_of_file,
)

PAIRS_CONFIG, LABELS_CONFIG = "pairs", "labels"
README = "README.md"
# Arrow types by column; "string", "int64", … are the Hub's dtype names too (the card's `features`),
# a one-element list is a list of that type.
PAIR_TYPES: dict[str, Any] = {
    "annotator_labels": ["string"],
    "genre": "string",
    "gold_label": "string",
    "pairID": "string",
    "promptID": "string",
    "sentence1": "string",
    "sentence1_binary_parse": "string",
    "sentence1_parse": "string",
    "sentence2": "string",
    "sentence2_binary_parse": "string",
    "sentence2_parse": "string",
    "dataset": "string",
    "aggregated_label": "string",
    "aggregated_posterior": "float64",
}
LABEL_TYPES: dict[str, Any] = {
    "pairID": "string",
    "split": "string",
    "position": "int64",
    "role": "string",
    "annotator": "string",
    "label": "string",
    "rating": "int64",
    "seconds": "float64",
    "excluded": "bool",
    "counted": "bool",
    "catch_trials_seen": "int64",
    "catch_trials_matched": "int64",
    "flags": ["string"],
    "typing_flags": ["string"],
}
# The per-annotator quality record: published only when the researcher asks (it describes people).
QUALITY_COLUMNS = ("flags", "catch_trials_seen", "catch_trials_matched")
RELEASE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
LICENSE_ID = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")
DEFAULT_LICENSE = "cc-by-sa-4.0"


class ReleaseError(Exception):
    """A release that cannot be made: the snapshot is not done or not readable here, its files are
    not its own, a name or folder is taken, or this server lacks pyarrow."""


def _pyarrow() -> tuple[Any, Any]:
    """(pyarrow, pyarrow.parquet), imported where a release is made: pyarrow is a dev requirement."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ReleaseError(
            "making a release needs pyarrow, which this server does not have "
            "(pip install -r requirements-dev.txt, or run make_release where it is installed)"
        ) from error
    return pa, pq


def _arrow_type(pa: Any, spec: Any) -> Any:
    if isinstance(spec, list):
        return pa.list_(_arrow_type(pa, spec[0]))
    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}[spec]


def _schema(pa: Any, columns: Sequence[str], types: Mapping[str, Any], what: str) -> Any:
    unknown = [name for name in columns if name not in types]
    if unknown:
        raise ReleaseError(
            f"the snapshot's {what} have columns a release does not know the type of: {', '.join(unknown)} "
            "(add them to modeling/release.py)"
        )
    return pa.schema([pa.field(name, _arrow_type(pa, types[name])) for name in columns])


def _feature(name: str, spec: Any) -> dict[str, Any]:
    if isinstance(spec, list):
        return {"name": name, "list": spec[0]}
    return {"name": name, "dtype": spec}


ROWS_PER_DECODE = 10_000


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    """The JSONL file's rows; decoded `ROWS_PER_DECODE` lines at a time as one JSON array (one
    decoder call per batch rather than per line: the release reads every row of a snapshot)."""
    with open(path, encoding="utf-8") as handle:
        while lines := list(islice(handle, ROWS_PER_DECODE)):
            batch = [line for line in lines if line.strip()]
            if batch:
                yield from json.loads(f"[{','.join(batch)}]")


def _verified(folder: Path, expected_hash: str) -> dict[str, Any]:
    """The snapshot's manifest, after checking every file it lists against its sha256 and the
    listing against the snapshot's content hash (a release never carries edited files). Unlike
    format.verify_snapshot, no train file is required: evaluation-only snapshots are releasable."""
    try:
        manifest: dict[str, Any] = json.loads((folder / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise ReleaseError(f"{MANIFEST_NAME} of the snapshot cannot be read: {error}") from error
    files = manifest_files(manifest)
    if expected_hash and (manifest.get("content_hash") != expected_hash or content_hash(files) != expected_hash):
        raise ReleaseError("the snapshot's manifest does not give its content hash; its files are not its own")
    for name, sha in files.items():
        path = folder / name
        if not path.is_file():
            raise ReleaseError(f"{name} is listed in the snapshot's {MANIFEST_NAME} but missing")
        if sha and sha256_of_file(path) != sha:
            raise ReleaseError(f"{name} does not match its sha256 in the snapshot's {MANIFEST_NAME}")
    return manifest


def _split_order(split: str) -> tuple[int, str]:
    order = (TRAIN_SPLIT, *EVALUATION_SPLITS)
    return (order.index(split), split) if split in order else (len(order), split)


def _pair_files(manifest: Mapping[str, Any]) -> dict[str, str]:
    """{split: its JSONL file} of the snapshot's pair files, train first, then dev/test."""
    found = {
        entry["split"]: entry["name"]
        for entry in manifest.get("files") or []
        if entry.get("split") and entry["name"].endswith(".jsonl")
    }
    return {split: found[split] for split in sorted(found, key=_split_order)}


def _first_columns(path: Path) -> list[str] | None:
    """The keys of the file's first row (its first line that is not blank), None for none."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                return list(json.loads(line))
    return None


def _pair_table(pa: Any, path: Path, schema: Any) -> Any:
    """A pair file as an Arrow table of `schema`, parsed by Arrow's own JSON reader (decoding
    every row in Python would be most of a release). The same table `from_pylist` of the rows
    gives: keys the schema lacks are left out, absent keys are null, one chunk per column."""
    import pyarrow.json as pa_json

    if path.stat().st_size == 0:
        return pa.Table.from_pylist([], schema=schema)
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    table = pa_json.read_json(path, parse_options=options, read_options=pa_json.ReadOptions(block_size=1 << 24))
    return table.select(schema.names).cast(schema).combine_chunks()


def tally_table(pa: Any, table: Any, tally: SplitTally) -> None:
    """Count a pair table's rows into `tally` as `SplitTally.add` would row by row, grouped by Arrow
    (a Python dict per row would be a large share of a release). A label list is grouped by its
    length and each of its places, so every pattern comes back exactly, whatever its words."""
    import pyarrow.compute as pc

    rows = table.num_rows
    if not rows:
        return

    def column(name: str, empty: str) -> Any:
        """The column with None and "" as `SplitTally.add` reads them (`or empty`)."""
        if name not in table.column_names:
            return pa.array([empty] * rows, pa.string())
        values = pc.fill_null(table.column(name).combine_chunks(), "")
        return values if empty == "" else pc.if_else(pc.equal(values, ""), pa.scalar(empty), values)

    keys = {"genre": column("genre", ""), "gold": column("gold_label", "-"), "dataset": column("dataset", "")}
    places = 0
    if "annotator_labels" in table.column_names:
        labels = table.column("annotator_labels").combine_chunks()
        lengths = pc.fill_null(pc.list_value_length(labels), 0)
        places = int(pc.max(lengths).as_py() or 0)
        words = pc.fill_null(labels.flatten(), "None")  # str(None), as add's map(str, ...) writes it
        starts = pc.subtract(labels.offsets[:-1], labels.offsets[0])
        keys["length"] = lengths
        for place in range(places):
            at = pc.if_else(pc.greater(lengths, place), pc.add(starts, place), pa.scalar(None, pa.int32()))
            keys[f"label{place}"] = pc.take(words, at)
    else:
        keys["length"] = pa.array([0] * rows, pa.int32())
    grouped = pa.table(keys).group_by(list(keys)).aggregate([([], "count_all")]).to_pylist()
    genres: Counter[str] = Counter()
    gold: Counter[str] = Counter()
    datasets: Counter[str] = Counter()
    patterns: Counter[tuple[tuple[str, ...], str]] = Counter()
    for group in grouped:
        n = group["count_all"]
        genres[group["genre"]] += n
        gold[group["gold"]] += n
        datasets[group["dataset"]] += n
        patterns[tuple(group[f"label{place}"] for place in range(group["length"])), group["gold"]] += n
    tally.add_counts(rows, genres, gold, datasets, patterns)


def _write_parquet(pa: Any, pq: Any, rows: Iterable[Mapping[str, Any]] | Any, schema: Any, path: Path) -> int:
    """One deterministic file: fixed compression, one row group, no pandas metadata, no clock.
    `rows`: the rows, or already an Arrow table of `schema`. Returns the table's Arrow size in
    bytes (the card's `num_bytes`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(list(rows), schema=schema)
    pq.write_table(
        table,
        path,
        compression="zstd",
        row_group_size=max(1, table.num_rows),
        use_dictionary=True,
        write_statistics=True,
        store_schema=False,
    )
    return int(table.nbytes)


def make_release(
    snapshot: Snapshot, out: str | Path, *, license_id: str = DEFAULT_LICENSE, quality_flags: bool = False
) -> dict[str, Any]:
    """Write the release of a done snapshot into the local folder `out` (created; must be empty).
    `quality_flags`: keep QUALITY_COLUMNS in the labels configuration (the card says which).
    Returns {"files": {relative path: bytes}, "splits": {config: {split: rows}}}."""
    if snapshot.status != JobStatus.DONE:
        raise ReleaseError(f"snapshot {snapshot.pk} is {snapshot.status}; release a finished snapshot")
    if not LICENSE_ID.match(license_id):
        raise ReleaseError(f"{license_id!r} is not a license id (the Hub's, e.g. cc-by-sa-4.0)")
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise ReleaseError(f"{out} is not empty; choose a new folder so no older file is mixed in")
    pa, pq = _pyarrow()
    try:
        with materialised_snapshot(snapshot) as folder:
            manifest = _verified(folder, snapshot.content_hash)
            out.mkdir(parents=True, exist_ok=True)
            made = _write_release(pa, pq, manifest, folder, out, license_id, quality_flags)
            with open(out / README, "a", encoding="utf-8", newline="\n") as readme:
                readme.write(decisions_markdown(snapshot))
            return made
    except SnapshotError as error:
        raise ReleaseError(f"snapshot {snapshot.pk}: {error}") from error


def decisions_markdown(snapshot: Snapshot) -> str:
    """The datasheet's summary of the audit log: what researchers decided about the snapshot's
    datasets up to the moment it was finished (so the same snapshot always gives the same card)."""
    slugs = snapshot.datasets or list(Dataset.objects.filter(team=snapshot.team).values_list("slug", flat=True))
    rows = summary_for_datasets(slugs, until=snapshot.finished_at)
    lines = ["", "## Researchers' decisions on this data (audit log)", ""]
    if not rows:
        lines.append("The audit log records no decision on these datasets before the snapshot was made.")
    else:
        lines += ["| decision | times | first | last |", "|---|---|---|---|"]
        lines += [f"| {row['action']} | {row['count']} | {row['first'][:10]} | {row['last'][:10]} |" for row in rows]
        lines += ["", "Each decision (who, when, before and after, why) is in the audit log of the team's dashboard."]
    return "\n".join(lines) + "\n"


def _write_release(
    pa: Any, pq: Any, manifest: Mapping[str, Any], folder: Path, out: Path, license_id: str, quality_flags: bool
) -> dict[str, Any]:
    splits: dict[str, dict[str, int]] = {}
    sizes: dict[str, dict[str, int]] = {}
    features: dict[str, list[dict[str, Any]]] = {}
    figures: dict[str, dict[str, Any]] = {}

    pair_files = _pair_files(manifest)
    columns = next((c for c in (_first_columns(folder / name) for name in pair_files.values()) if c), ["pairID"])
    pair_schema = _schema(pa, columns, PAIR_TYPES, "pair files")
    features[PAIRS_CONFIG] = [_feature(name, PAIR_TYPES[name]) for name in columns]
    splits[PAIRS_CONFIG], sizes[PAIRS_CONFIG] = {}, {}
    for split, name in pair_files.items():  # one split in memory at a time
        tally = SplitTally(manifest)
        table = _pair_table(pa, folder / name, pair_schema)
        tally_table(pa, table, tally)
        sizes[PAIRS_CONFIG][split] = _write_parquet(pa, pq, table, pair_schema, out / PAIRS_CONFIG / f"{split}.parquet")
        splits[PAIRS_CONFIG][split] = table.num_rows
        figures[split] = tally.figures()

    dropped: list[str] = []
    if LABELS_FILE in manifest_files(manifest):
        by_split: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in _rows(folder / LABELS_FILE):
            by_split[row["split"]].append(row)
        label_columns = _first_columns(folder / LABELS_FILE) or ["pairID"]
        if not quality_flags:
            dropped = [name for name in label_columns if name in QUALITY_COLUMNS]
            label_columns = [name for name in label_columns if name not in QUALITY_COLUMNS]
        label_schema = _schema(pa, label_columns, LABEL_TYPES, "label rows")
        features[LABELS_CONFIG] = [_feature(name, LABEL_TYPES[name]) for name in label_columns]
        splits[LABELS_CONFIG], sizes[LABELS_CONFIG] = {}, {}
        for split in splits[PAIRS_CONFIG]:  # the pairs' splits; one without labels gets an empty file
            rows = [{name: row.get(name) for name in label_columns} for row in by_split.get(split, [])]
            path = out / LABELS_CONFIG / f"{split}.parquet"
            sizes[LABELS_CONFIG][split] = _write_parquet(pa, pq, rows, label_schema, path)
            splits[LABELS_CONFIG][split] = len(rows)

    hashes = {str(path.relative_to(out)): sha256_of_file(path) for path in sorted(out.rglob("*.parquet"))}
    text = card(
        manifest,
        splits,
        sizes,
        features,
        figures,
        hashes,
        license_id=license_id,
        quality_flags=quality_flags,
        dropped_columns=dropped,
    )
    (out / README).write_text(text, encoding="utf-8", newline="\n")
    files = {str(path.relative_to(out)): path.stat().st_size for path in sorted(out.rglob("*")) if path.is_file()}
    return {"files": files, "splits": splits}


def card(
    manifest: Mapping[str, Any],
    splits: Mapping[str, Mapping[str, int]],
    sizes: Mapping[str, Mapping[str, int]],
    features: Mapping[str, list[dict[str, Any]]],
    figures: Mapping[str, Mapping[str, Any]],
    hashes: Mapping[str, str],
    *,
    license_id: str,
    quality_flags: bool,
    dropped_columns: Sequence[str],
) -> str:
    """The dataset card: the Hub's YAML header, then the datasheet. Each configuration's
    `data_files` names its files split by split and `dataset_info` gives each split's name, rows and
    Arrow bytes (all three: the `datasets` library ignores, with a warning, a split list lacking one)."""
    configs, infos = [], []
    for name in (PAIRS_CONFIG, LABELS_CONFIG):
        if name not in splits:
            continue
        config: dict[str, Any] = {
            "config_name": name,
            "data_files": [{"split": split, "path": f"{name}/{split}.parquet"} for split in splits[name]],
        }
        if name == PAIRS_CONFIG:
            config["default"] = True
        configs.append(config)
        infos.append(
            {
                "config_name": name,
                "features": features[name],
                "splits": [
                    {"name": split, "num_bytes": sizes[name][split], "num_examples": rows}
                    for split, rows in splits[name].items()
                ],
            }
        )
    total = sum(splits[PAIRS_CONFIG].values())
    header = {
        "license": license_id,
        "language": ["en"],
        "task_categories": ["text-classification"],
        "task_ids": ["natural-language-inference"],
        "pretty_name": card_title(manifest),
        "size_categories": [_size_category(total)],
        "configs": configs,
        "dataset_info": infos,
    }
    front = yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=1000)
    body = datasheet_markdown(
        manifest, splits, figures, hashes, quality_flags=quality_flags, dropped_columns=dropped_columns
    )
    return f"---\n{front}---\n\n{body}"


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return name
    return "1M<n<10M"


# --- Releases in the storage (file_storage("releases"), under `<name>/`) ------------------------------


def check_release_name(name: str) -> str:
    if not RELEASE_NAME.match(name or ""):
        raise ReleaseError(
            f"{name!r} is not a release name: letters, digits, '.', '_' and '-', at most 100, not starting with '.'"
        )
    return name


def default_release_name(snapshot: Snapshot) -> str:
    return f"snapshot-{snapshot.pk}"


def _stored_names(name: str) -> list[str]:
    """Every file the releases storage holds under `<name>/`, as paths relative to it."""
    storage = file_storage("releases")
    found: list[str] = []
    pending = [""]
    while pending:
        prefix = pending.pop()
        try:
            folders, files = storage.listdir(f"{name}/{prefix}".rstrip("/"))
        except FileNotFoundError:  # the local default has no such folder
            continue
        found += [f"{prefix}{file}" for file in files]
        pending += [f"{prefix}{folder}/" for folder in folders]
    return sorted(found)


def publish_release(
    snapshot: Snapshot,
    name: str,
    *,
    license_id: str = DEFAULT_LICENSE,
    quality_flags: bool = False,
    by: Any = None,
) -> dict[str, Any]:
    """Make the release of a done snapshot and store it in the releases storage under `<name>/`
    (a name already used is refused). The card is stored last, so a release is listed only once
    every file is in; a failure removes what was stored. Returns make_release's answer and "name"."""
    check_release_name(name)
    if _stored_names(name):
        raise ReleaseError(f"a release named {name!r} exists already; choose another name")
    storage = file_storage("releases")
    Path(settings.DATA_DIR).mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".release-{snapshot.pk}-", dir=settings.DATA_DIR))
    saved: list[str] = []
    try:
        made = make_release(snapshot, scratch / "release", license_id=license_id, quality_flags=quality_flags)
        for relative in sorted(made["files"], key=lambda path: (path == README, path)):
            key = f"{name}/{relative}"
            with open(scratch / "release" / relative, "rb") as handle:
                got = storage.save(key, File(handle, name=Path(relative).name))
            saved.append(got)
            if got != key:
                raise ReleaseError(f"the releases storage already held {key}; choose another name")
    except BaseException:
        for key in saved:
            storage.delete(key)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    audit.record(
        PUBLISHED,
        actor=by,
        subject=snapshot,
        team_id=snapshot.team_id,
        after={"name": name, "license": license_id, "quality_flags": quality_flags},
        datasets=snapshot.datasets,
    )
    return {**made, "name": name}


def release_names() -> list[str]:
    """The releases in the storage (a folder with its card), sorted by name."""
    storage = file_storage("releases")
    try:
        folders, _ = storage.listdir("")
    except FileNotFoundError:
        return []
    return sorted(name for name in folders if RELEASE_NAME.match(name) and storage.exists(f"{name}/{README}"))


PUBLISHED = "release.published"  # the audit entry of a release: its name and its snapshot's team


class Release(NamedTuple):
    """A stored release by name, with its team (`release_teams`)."""

    name: str
    team_id: int | None


def releases() -> list[Release]:
    """The stored releases (`release_names`) with their teams: two reads whatever their number."""
    names = release_names()
    teams = release_teams(names)
    return [Release(name, teams.get(name)) for name in names]


def release_team(name: str) -> int | None:
    """The team of one release (None: none recorded)."""
    return release_teams([name]).get(name)


def release_teams(names: Iterable[str]) -> dict[str, int | None]:
    """{release name: the team of the snapshot it was made of}. A release is files in storage
    with no row of its own; its audit entry (written by `publish_release`) names its team. A
    release without one (put in storage by hand) is in no team: only a superuser sees it."""
    return teams_of_named(PUBLISHED, names)


def release_files(name: str) -> list[tuple[str, int]]:
    """(path within the release, bytes) of every file of a stored release, the card first."""
    storage = file_storage("releases")
    names = _stored_names(check_release_name(name))
    return [(path, storage.size(f"{name}/{path}")) for path in sorted(names, key=lambda p: (p != README, p))]


def open_release_file(name: str, path: str) -> File[Any] | None:
    """A stored release's file opened for reading (binary), or None when there is no such file."""
    check_release_name(name)
    if path not in _stored_names(name):  # also refuses "..", absolute paths and anything not stored
        return None
    opened: File[Any] = file_storage("releases").open(f"{name}/{path}", "rb")
    return opened
