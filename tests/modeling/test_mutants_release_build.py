"""How modeling/release.py builds a release out of a snapshot's folder, pinned where mutmut found it
unguarded: the manifest checked (unreadable, another content hash, a listed file missing or
changed, a file listed with no sha256 read as it is); which files are pair files and their split
order (train, the evaluation splits in their order, then any other by name); the columns (the first
row that is not blank of the first pair file with one, `pairID` when none has a row); JSONL rows read
past blank lines; a pair file as an Arrow table of exactly the schema, whatever its other keys hold;
the Arrow tally of a sliced table, or of one without annotator labels, equal to the row-by-row one;
the Parquet options (zstd, one row group however many rows, dictionaries, statistics, the schema's
types, no Arrow schema); columns of no known type refused by name; a server without pyarrow told
how to install it; the label files (one per pair split, quality columns dropped unless asked); the
card's YAML header (its key order, unicode and long titles kept on one line, each configuration's
files and sizes, the size category at each power of ten); the audit log's decisions until the
snapshot was finished, appended to the card; and the refusals of `make_release` with their reasons."""

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from django.utils import timezone

from audit import services as audit
from base.long_tasks import JobStatus
from corpus.models import Dataset
from modeling import release
from modeling.datasheet import SplitTally
from modeling.models import Snapshot
from modeling.snapshots.format import content_hash, sha256_of_file
from teams.models import Team


def write_snapshot(folder: Path, files: Mapping[str, str], splits: Mapping[str, str]) -> dict[str, Any]:
    """A snapshot folder by hand: `files` {name: text}, `splits` {name: split}; its manifest lists
    every file with its sha256 and gives their content hash. Returns the manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        entries.append({"name": name, "split": splits.get(name, ""), "sha256": sha256_of_file(folder / name)})
    manifest = {"files": entries, "content_hash": content_hash(entries), "datasets": ["hand-made"]}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest


def jsonl(*rows: Mapping[str, Any]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def pair(pair_id: str, genre: str = "fiction", labels: tuple[str, ...] = ("entailment",)) -> dict[str, Any]:
    return {"annotator_labels": list(labels), "genre": genre, "gold_label": labels[0], "pairID": pair_id}


def label(pair_id: str, split: str, **quality: Any) -> dict[str, Any]:
    return {"pairID": pair_id, "split": split, "label": "entailment", "seconds": 4.0, **quality}


def header(text: str) -> dict[str, Any]:
    assert text.startswith("---\n")
    loaded: dict[str, Any] = yaml.safe_load(text.split("---\n", 2)[1])
    return loaded


# --- The manifest checked ---------------------------------------------------------------------


def test_a_snapshot_whose_manifest_is_missing_or_not_json_is_refused_by_the_manifests_name(tmp_path: Path) -> None:
    with pytest.raises(release.ReleaseError, match=r"^manifest\.json of the snapshot cannot be read: "):
        release._verified(tmp_path, "")
    (tmp_path / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(release.ReleaseError, match=r"^manifest\.json of the snapshot cannot be read: "):
        release._verified(tmp_path, "")


def test_a_manifest_that_gives_another_content_hash_or_lists_other_files_than_the_snapshots_is_refused(
    tmp_path: Path,
) -> None:
    manifest = write_snapshot(tmp_path, {"dev.jsonl": jsonl(pair("a"))}, {"dev.jsonl": "dev"})
    expected = manifest["content_hash"]
    assert release._verified(tmp_path, expected) == manifest
    refused = "^the snapshot's manifest does not give its content hash; its files are not its own$"
    with pytest.raises(release.ReleaseError, match=refused):
        release._verified(tmp_path, "0" * 64)  # the manifest names another snapshot's hash
    # The manifest's own field agrees, but the files it lists hash to something else.
    (tmp_path / "manifest.json").write_text(
        json.dumps({**manifest, "files": [*manifest["files"], {"name": "more.tsv", "sha256": ""}]}), encoding="utf-8"
    )
    with pytest.raises(release.ReleaseError, match=refused):
        release._verified(tmp_path, expected)


def test_without_an_expected_hash_the_manifests_own_hash_is_not_compared(tmp_path: Path) -> None:
    manifest = write_snapshot(tmp_path, {"dev.jsonl": jsonl(pair("a"))}, {"dev.jsonl": "dev"})
    edited = {**manifest, "content_hash": "not the hash"}
    (tmp_path / "manifest.json").write_text(json.dumps(edited), encoding="utf-8")
    assert release._verified(tmp_path, "") == edited


def test_a_listed_file_that_is_missing_or_a_folder_is_refused_by_its_name(tmp_path: Path) -> None:
    manifest = write_snapshot(tmp_path, {"dev.jsonl": jsonl(pair("a"))}, {"dev.jsonl": "dev"})
    (tmp_path / "dev.jsonl").unlink()
    missing = r"^dev\.jsonl is listed in the snapshot's manifest\.json but missing$"
    with pytest.raises(release.ReleaseError, match=missing):
        release._verified(tmp_path, manifest["content_hash"])
    (tmp_path / "dev.jsonl").mkdir()
    with pytest.raises(release.ReleaseError, match=missing):
        release._verified(tmp_path, manifest["content_hash"])


def test_a_file_listed_without_a_sha256_is_taken_as_it_is_and_one_with_is_checked(tmp_path: Path) -> None:
    manifest = write_snapshot(
        tmp_path, {"dev.jsonl": jsonl(pair("a")), "train.jsonl": jsonl(pair("b"))}, {"dev.jsonl": "dev"}
    )
    manifest["files"][1]["sha256"] = None
    manifest["content_hash"] = content_hash(manifest["files"])
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (tmp_path / "train.jsonl").write_text(jsonl(pair("changed")), encoding="utf-8")
    assert release._verified(tmp_path, manifest["content_hash"]) == manifest
    (tmp_path / "dev.jsonl").write_text(jsonl(pair("changed")), encoding="utf-8")
    with pytest.raises(
        release.ReleaseError, match=r"^dev\.jsonl does not match its sha256 in the snapshot's manifest\.json$"
    ):
        release._verified(tmp_path, manifest["content_hash"])


# --- Pair files, their order and their columns --------------------------------------------------


def test_pair_files_are_the_jsonl_files_with_a_split_train_first_then_evaluation_splits_in_order_then_others_by_name() -> (
    None
):
    listed = ["zeta", "dev", "test_mismatched", "alpha", "dev_matched", "train", "test", "dev_mismatched"]
    manifest = {
        "files": [
            {"name": "labels.jsonl", "split": ""},
            {"name": "dev.tsv", "split": "dev"},
            *({"name": f"{split}.jsonl", "split": split} for split in listed),
        ]
    }
    order = ["train", "dev_matched", "dev_mismatched", "test_mismatched", "dev", "test", "alpha", "zeta"]
    assert list(release._pair_files(manifest).items()) == [(split, f"{split}.jsonl") for split in order]
    assert release._pair_files({}) == {} == release._pair_files({"files": None})


def test_the_columns_are_the_keys_of_the_first_row_that_is_not_blank(tmp_path: Path) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text('\n   \n{"pairID": "a", "genre": "g"}\n{"sentence1": "s"}\n', encoding="utf-8")
    assert release._first_columns(path) == ["pairID", "genre"]
    path.write_text("\n \n", encoding="utf-8")
    assert release._first_columns(path) is None
    path.write_text("", encoding="utf-8")
    assert release._first_columns(path) is None


def test_label_rows_are_read_in_order_past_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    rows = [{"pairID": str(i), "position": i} for i in range(4)]
    path.write_text("\n" + jsonl(*rows[:2]) + "  \n\n" + jsonl(*rows[2:]), encoding="utf-8")
    assert list(release._rows(path)) == rows
    path.write_text("\n\n", encoding="utf-8")
    assert list(release._rows(path)) == []


def test_a_pair_file_is_a_table_of_exactly_the_schema_its_extra_keys_left_out_its_absent_keys_null(
    tmp_path: Path,
) -> None:
    columns = ["pairID", "annotator_labels", "genre", "sentence1"]  # no row has a sentence1
    schema = release._schema(pa, columns, release.PAIR_TYPES, "pair files")
    path = tmp_path / "dev.jsonl"
    rows: list[dict[str, Any]] = [  # "extra" is a number, then a string: left out whatever it holds
        {"genre": "fiction", "extra": 1, "pairID": "a", "annotator_labels": ["entailment"]},
        {"pairID": "b", "annotator_labels": None, "extra": "two"},
    ]
    path.write_text(jsonl(*rows), encoding="utf-8")
    table = release._pair_table(pa, path, schema)
    expected = pa.Table.from_pylist([{name: row.get(name) for name in schema.names} for row in rows], schema=schema)
    assert table.schema == schema and table.equals(expected)
    assert all(column.num_chunks == 1 for column in table.columns)
    path.write_text("", encoding="utf-8")
    empty = release._pair_table(pa, path, schema)
    assert empty.num_rows == 0 and empty.schema == schema


@pytest.mark.parametrize("labelled", [True, False])
def test_the_arrow_tally_of_a_sliced_pair_table_counts_what_the_row_by_row_tally_counts(labelled: bool) -> None:
    """A table whose first row was sliced off (its label lists start past the first) and, without
    annotator labels, a table of genres, gold labels and datasets only: `SplitTally.add` row by
    row says what the counts are."""
    rows: list[dict[str, Any]] = [
        {"annotator_labels": ["x"] * 7, "genre": "cut", "gold_label": "x", "dataset": "cut"},
        {"annotator_labels": ["e", "n", "e", "e", "e"], "genre": None, "gold_label": "e", "dataset": "a"},
        {"annotator_labels": ["e", "n", "e", "e", "e"], "genre": "", "gold_label": "e", "dataset": "a"},
        {"annotator_labels": None, "genre": "travel", "gold_label": None, "dataset": None},
        {"annotator_labels": [], "genre": "travel", "gold_label": "", "dataset": ""},
        {"annotator_labels": ["c", None], "genre": "travel", "gold_label": "-", "dataset": "b"},
        {"annotator_labels": ["c"], "genre": "fiction", "gold_label": "c", "dataset": "b"},
    ]
    if not labelled:
        rows = [{key: value for key, value in row.items() if key != "annotator_labels"} for row in rows]
    table = pa.Table.from_pylist(rows).slice(1)
    by_row, by_table = SplitTally({}), SplitTally({})
    for row in rows[1:]:
        by_row.add(row)
    release.tally_table(pa, table, by_table)
    assert (by_table.rows, by_table.genres, by_table.gold, by_table.datasets, by_table.patterns) == (
        by_row.rows,
        by_row.genres,
        by_row.gold,
        by_row.datasets,
        by_row.patterns,
    )
    assert by_row.gold == {"e": 2, "-": 3, "c": 1} and by_row.genres[""] == 2
    empty = SplitTally({})
    release.tally_table(pa, table.slice(0, 0), empty)
    assert empty.rows == 0 and not empty.patterns


# --- Arrow types and Parquet files ---------------------------------------------------------------


def test_a_server_without_pyarrow_refuses_a_release_saying_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what `import pyarrow` finds on such a server
    refused = (
        r"^making a release needs pyarrow, which this server does not have "
        r"\(pip install -r requirements-dev\.txt, or run make_release where it is installed\)$"
    )
    with pytest.raises(release.ReleaseError, match=refused):
        release._pyarrow()


def test_every_known_label_column_has_its_arrow_type_and_its_hub_feature() -> None:
    names = list(release.LABEL_TYPES)
    schema = release._schema(pa, names, release.LABEL_TYPES, "label rows")
    expected = {
        "pairID": pa.string(),
        "position": pa.int64(),
        "seconds": pa.float64(),
        "excluded": pa.bool_(),
        "flags": pa.list_(pa.string()),
    }
    for name, arrow_type in expected.items():
        assert schema.field(name).type == arrow_type, name
    assert schema.names == names
    assert release._feature("flags", release.LABEL_TYPES["flags"]) == {"name": "flags", "list": "string"}
    assert release._feature("seconds", "float64") == {"name": "seconds", "dtype": "float64"}


def test_columns_a_release_knows_no_type_of_are_refused_by_name() -> None:
    refused = (
        r"^the snapshot's pair files have columns a release does not know the type of: mood, colour "
        r"\(add them to modeling/release\.py\)$"
    )
    with pytest.raises(release.ReleaseError, match=refused):
        release._schema(pa, ["pairID", "mood", "genre", "colour"], release.PAIR_TYPES, "pair files")


def test_a_parquet_file_is_zstd_in_one_row_group_with_dictionaries_and_statistics_and_no_arrow_schema(
    tmp_path: Path,
) -> None:
    schema = release._schema(pa, ["pairID", "genre", "dataset"], release.PAIR_TYPES, "pair files")
    rows = [{"pairID": str(i), "genre": "fiction", "dataset": None} for i in range(3)]
    path = tmp_path / "not" / "yet" / "made.parquet"
    size = release._write_parquet(pa, pq, iter(rows), schema, path)
    assert size == pa.Table.from_pylist(rows, schema=schema).nbytes
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == 3 and meta.num_row_groups == 1
    column = meta.row_group(0).column(1)
    assert column.compression == "ZSTD"
    assert column.statistics is not None and column.statistics.has_min_max
    assert "RLE_DICTIONARY" in column.encodings or "PLAIN_DICTIONARY" in column.encodings
    assert b"ARROW:schema" not in (meta.metadata or {})
    assert pq.read_table(path).to_pylist() == rows
    assert pq.read_schema(path).field("dataset").type == pa.string()  # the schema's, though no row has one


def test_a_table_of_more_rows_than_arrows_default_row_group_is_still_one_row_group(tmp_path: Path) -> None:
    schema = release._schema(pa, ["position"], release.LABEL_TYPES, "label rows")
    table = pa.table({"position": pa.nulls(1024 * 1024 + 1, pa.int64())})
    release._write_parquet(pa, pq, table, schema, tmp_path / "big.parquet")
    assert pq.ParquetFile(tmp_path / "big.parquet").metadata.num_row_groups == 1


def test_an_empty_table_is_written_as_a_parquet_file_with_no_rows(tmp_path: Path) -> None:
    schema = release._schema(pa, ["pairID"], release.PAIR_TYPES, "pair files")
    table = pa.Table.from_pylist([], schema=schema)
    assert release._write_parquet(pa, pq, table, schema, tmp_path / "empty.parquet") == table.nbytes
    assert pq.read_table(tmp_path / "empty.parquet").num_rows == 0


# --- The files of a release, and its card ---------------------------------------------------------


def test_the_columns_are_the_first_pair_file_with_a_row_and_every_pair_split_gets_a_label_file(tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    manifest = write_snapshot(
        folder,
        {
            "train.jsonl": "\n",
            "dev.jsonl": jsonl({"pairID": "d1", "genre": "fiction"}, {"pairID": "d2", "genre": "travel"}),
            "labels.jsonl": jsonl(
                label("d1", "dev", flags=["too fast"], catch_trials_seen=2),
                label("d2", "dev", flags=[], catch_trials_seen=0),
                label("gone", "elsewhere", flags=[], catch_trials_seen=1),
            ),
        },
        {"train.jsonl": "train", "dev.jsonl": "dev"},
    )
    out = tmp_path / "out"
    made = release._write_release(pa, pq, manifest, folder, out, "mit", False)
    assert made["splits"] == {"pairs": {"train": 0, "dev": 2}, "labels": {"train": 0, "dev": 2}}
    files = ["README.md", "labels/dev.parquet", "labels/train.parquet", "pairs/dev.parquet", "pairs/train.parquet"]
    assert made["files"] == {name: (out / name).stat().st_size for name in files}
    assert pq.read_table(out / "pairs" / "train.parquet").schema.names == ["pairID", "genre"]
    dev_labels = pq.read_table(out / "labels" / "dev.parquet")
    assert dev_labels.schema.names == ["pairID", "split", "label", "seconds"]  # no quality columns unless asked
    assert dev_labels.column("pairID").to_pylist() == ["d1", "d2"]
    empty_labels = pq.read_table(out / "labels" / "train.parquet")
    assert empty_labels.num_rows == 0 and empty_labels.schema == dev_labels.schema

    meta = header((out / "README.md").read_text(encoding="utf-8"))
    assert meta["license"] == "mit"
    pairs_info, labels_info = meta["dataset_info"]
    assert pairs_info["features"] == [{"name": "pairID", "dtype": "string"}, {"name": "genre", "dtype": "string"}]
    assert labels_info["features"][-1] == {"name": "seconds", "dtype": "float64"}
    assert [s["num_bytes"] for s in pairs_info["splits"]] == [
        release._pair_table(pa, folder / name, pq.read_schema(out / "pairs" / "dev.parquet")).nbytes
        for name in ("train.jsonl", "dev.jsonl")
    ]
    text = (out / "README.md").read_text(encoding="utf-8")
    for name in files[1:]:
        config, split = name.removesuffix(".parquet").split("/")
        assert f"| {config} | {split} | " in text and f"`{sha256_of_file(out / name)[:16]}` |" in text, name


def test_quality_columns_are_kept_when_asked_and_the_card_names_the_dropped_ones_otherwise(tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    manifest = write_snapshot(
        folder,
        {
            "dev.jsonl": jsonl({"pairID": "d1"}),
            "labels.jsonl": jsonl(label("d1", "dev", flags=["too fast"], catch_trials_matched=1)),
        },
        {"dev.jsonl": "dev"},
    )
    release._write_release(pa, pq, manifest, folder, tmp_path / "kept", "mit", True)
    kept = pq.read_table(tmp_path / "kept" / "labels" / "dev.parquet")
    assert kept.schema.names == ["pairID", "split", "label", "seconds", "flags", "catch_trials_matched"]
    assert kept.column("flags").to_pylist() == [["too fast"]]
    assert "at the researcher's request" in (tmp_path / "kept" / "README.md").read_text(encoding="utf-8")
    release._write_release(pa, pq, manifest, folder, tmp_path / "dropped", "mit", False)
    dropped = (tmp_path / "dropped" / "README.md").read_text(encoding="utf-8")
    assert "`flags`, `catch_trials_matched`" in dropped


def test_pair_or_label_columns_of_no_known_type_stop_the_release_naming_the_file_kind(tmp_path: Path) -> None:
    odd_pairs = write_snapshot(
        tmp_path / "a", {"dev.jsonl": jsonl({"pairID": "d1", "mood": "x"})}, {"dev.jsonl": "dev"}
    )
    with pytest.raises(release.ReleaseError, match=r"^the snapshot's pair files have columns .*: mood \("):
        release._write_release(pa, pq, odd_pairs, tmp_path / "a", tmp_path / "out-a", "mit", False)
    odd_labels = write_snapshot(
        tmp_path / "b",
        {"dev.jsonl": jsonl({"pairID": "d1"}), "labels.jsonl": jsonl({**label("d1", "dev"), "mood": "x"})},
        {"dev.jsonl": "dev"},
    )
    with pytest.raises(release.ReleaseError, match=r"^the snapshot's label rows have columns .*: mood \("):
        release._write_release(pa, pq, odd_labels, tmp_path / "b", tmp_path / "out-b", "mit", False)


def test_a_snapshot_whose_pair_and_label_files_have_no_row_is_released_with_a_pairID_column(tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    manifest = write_snapshot(folder, {"dev.jsonl": "", "labels.jsonl": "\n"}, {"dev.jsonl": "dev"})
    made = release._write_release(pa, pq, manifest, folder, tmp_path / "out", "mit", False)
    assert made["splits"] == {"pairs": {"dev": 0}, "labels": {"dev": 0}}
    for config in ("pairs", "labels"):
        assert pq.read_schema(tmp_path / "out" / config / "dev.parquet").names == ["pairID"]


@pytest.mark.parametrize(
    ("rows", "category"),
    [
        (0, "n<1K"),
        (999, "n<1K"),
        (1_000, "1K<n<10K"),
        (9_999, "1K<n<10K"),
        (10_000, "10K<n<100K"),
        (99_999, "10K<n<100K"),
        (100_000, "100K<n<1M"),
        (999_999, "100K<n<1M"),
        (1_000_000, "1M<n<10M"),
    ],
)
def test_the_size_category_changes_at_each_power_of_ten(rows: int, category: str) -> None:
    assert release._size_category(rows) == category


def test_the_cards_header_keeps_its_order_a_unicode_and_long_title_on_one_line_and_sizes_by_the_pairs() -> None:
    title = "Ünïcödé NLI " + "very long name " * 8
    manifest = {"datasets": [title.strip()]}
    figures = SplitTally(manifest).figures()
    text = release.card(
        manifest,
        {"pairs": {"train": 600, "dev": 399}, "labels": {"train": 3000, "dev": 2000}},
        {"pairs": {"train": 11, "dev": 12}, "labels": {"train": 13, "dev": 14}},
        {"pairs": [{"name": "pairID", "dtype": "string"}], "labels": [{"name": "label", "dtype": "string"}]},
        {"train": figures, "dev": figures},
        {},
        license_id="mit",
        quality_flags=False,
        dropped_columns=(),
    )
    front, body = text.removeprefix("---\n").split("---\n\n", 1)
    assert [line.split(":")[0] for line in front.splitlines() if not line.startswith((" ", "-"))] == [
        "license",
        "language",
        "task_categories",
        "task_ids",
        "pretty_name",
        "size_categories",
        "configs",
        "dataset_info",
    ]
    assert f"pretty_name: {title.strip()}\n" in front
    assert body.startswith(f"# {title.strip()}\n")
    meta = header(text)
    assert (meta["language"], meta["task_categories"], meta["task_ids"]) == (
        ["en"],
        ["text-classification"],
        ["natural-language-inference"],
    )
    assert meta["size_categories"] == ["n<1K"]  # 999 pairs; the labels' rows are not pairs
    assert meta["configs"] == [
        {
            "config_name": "pairs",
            "data_files": [
                {"split": "train", "path": "pairs/train.parquet"},
                {"split": "dev", "path": "pairs/dev.parquet"},
            ],
            "default": True,
        },
        {
            "config_name": "labels",
            "data_files": [
                {"split": "train", "path": "labels/train.parquet"},
                {"split": "dev", "path": "labels/dev.parquet"},
            ],
        },
    ]
    assert meta["dataset_info"][1] == {
        "config_name": "labels",
        "features": [{"name": "label", "dtype": "string"}],
        "splits": [
            {"name": "train", "num_bytes": 13, "num_examples": 3000},
            {"name": "dev", "num_bytes": 14, "num_examples": 2000},
        ],
    }


# --- make_release and the audit log's decisions ------------------------------------------------


@pytest.fixture
def hand_made(db: None, tmp_path: Path) -> Snapshot:
    """A done snapshot of one dataset whose folder was written by hand: train and dev pairs, and
    a label row with its quality flags."""
    Dataset.objects.create(slug="hand-made", name="Hand-made NLI")
    folder = tmp_path / "snapshot"
    manifest = write_snapshot(
        folder,
        {
            "train.jsonl": jsonl(pair("t1")),
            "dev.jsonl": jsonl(pair("d1"), pair("d2", "travel")),
            "labels.jsonl": jsonl(label("d1", "dev", flags=["too fast"])),
        },
        {"train.jsonl": "train", "dev.jsonl": "dev"},
    )
    return Snapshot.objects.create(
        datasets=["hand-made"],
        status=JobStatus.DONE,
        directory=str(folder),
        content_hash=manifest["content_hash"],
    )


def decide(action: str, slug: str) -> str:
    """Record a decision on the dataset `slug`, now (the log is append-only); the day it is."""
    entry = audit.record(action, subject_type="corpus.pair", subject_id=1, datasets=[slug])
    return entry.at.isoformat()[:10]


def finish(snapshot: Snapshot) -> None:
    """The snapshot finished now: the decisions recorded later are not its."""
    Snapshot.objects.filter(pk=snapshot.pk).update(finished_at=timezone.now())
    snapshot.refresh_from_db()


def test_a_release_goes_into_an_existing_empty_folder_or_a_new_nested_one(hand_made: Snapshot, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for out in (tmp_path / "empty", tmp_path / "new" / "nested"):
        made = release.make_release(hand_made, out)
        assert made["splits"] == {"pairs": {"train": 1, "dev": 2}, "labels": {"train": 0, "dev": 1}}
        assert sorted(made["files"]) == [
            "README.md",
            "labels/dev.parquet",
            "labels/train.parquet",
            "pairs/dev.parquet",
            "pairs/train.parquet",
        ]
        assert "flags" not in pq.read_schema(out / "labels" / "dev.parquet").names  # unless the researcher asks


def test_a_release_keeps_the_quality_columns_when_the_researcher_asks(hand_made: Snapshot, tmp_path: Path) -> None:
    release.make_release(hand_made, tmp_path / "out", quality_flags=True)
    kept = pq.read_table(tmp_path / "out" / "labels" / "dev.parquet")
    assert kept.column("flags").to_pylist() == [["too fast"]]


def test_the_card_is_followed_by_the_decisions_on_the_snapshots_datasets_until_it_was_finished(
    hand_made: Snapshot, tmp_path: Path
) -> None:
    day = decide("pair.gold_set", "hand-made")
    decide("pair.gold_set", "hand-made")
    decide("worker.excluded", "hand-made")
    decide("worker.paid", "another")
    finish(hand_made)
    decide("worker.excluded", "hand-made")
    release.make_release(hand_made, tmp_path / "out", license_id="mit")
    text = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert header(text)["license"] == "mit"
    card, decisions = text.split("\n\n## Researchers' decisions on this data (audit log)\n\n")
    assert "# hand-made" in card and "## Files and splits" in card
    assert decisions == (
        "| decision | times | first | last |\n"
        "|---|---|---|---|\n"
        f"| pair.gold_set | 2 | {day} | {day} |\n"
        f"| worker.excluded | 1 | {day} | {day} |\n"
        "\n"
        "Each decision (who, when, before and after, why) is in the audit log of the team's dashboard.\n"
    )


def test_a_snapshot_of_every_dataset_reads_the_decisions_on_its_teams_datasets(hand_made: Snapshot) -> None:
    other = Team.objects.create(slug="other-team", name="Other")
    Dataset.objects.create(slug="theirs", name="Theirs", team=other)
    day = decide("pair.gold_set", "hand-made")
    decide("worker.excluded", "theirs")
    Snapshot.objects.filter(pk=hand_made.pk).update(datasets=[])
    finish(hand_made)
    assert f"| pair.gold_set | 1 | {day} | {day} |" in release.decisions_markdown(hand_made)
    assert "worker.excluded" not in release.decisions_markdown(hand_made)


def test_a_snapshot_with_no_decision_says_so(hand_made: Snapshot) -> None:
    assert release.decisions_markdown(hand_made) == (
        "\n## Researchers' decisions on this data (audit log)\n\n"
        "The audit log records no decision on these datasets before the snapshot was made.\n"
    )


def test_a_release_is_refused_with_its_reason(hand_made: Snapshot, tmp_path: Path) -> None:
    with pytest.raises(
        release.ReleaseError, match=r"^'CC BY' is not a license id \(the Hub's, e\.g\. cc-by-sa-4\.0\)$"
    ):
        release.make_release(hand_made, tmp_path / "a", license_id="CC BY")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "old.txt").write_text("old", encoding="utf-8")
    with pytest.raises(
        release.ReleaseError,
        match=f"^{tmp_path / 'used'} is not empty; choose a new folder so no older file is mixed in$",
    ):
        release.make_release(hand_made, tmp_path / "used")
    Snapshot.objects.filter(pk=hand_made.pk).update(status=JobStatus.RUNNING)
    hand_made.refresh_from_db()
    with pytest.raises(
        release.ReleaseError, match=f"^snapshot {hand_made.pk} is running; release a finished snapshot$"
    ):
        release.make_release(hand_made, tmp_path / "b")


def test_a_snapshot_whose_manifest_is_not_the_one_its_row_names_is_not_released(
    hand_made: Snapshot, tmp_path: Path
) -> None:
    Snapshot.objects.filter(pk=hand_made.pk).update(content_hash="0" * 64)
    hand_made.refresh_from_db()
    with pytest.raises(release.ReleaseError, match="its files are not its own"):
        release.make_release(hand_made, tmp_path / "out")


def test_a_snapshot_whose_files_this_host_cannot_reach_is_refused_naming_the_snapshot(
    hand_made: Snapshot, tmp_path: Path
) -> None:
    Snapshot.objects.filter(pk=hand_made.pk).update(directory=str(tmp_path / "elsewhere"))
    hand_made.refresh_from_db()
    with pytest.raises(release.ReleaseError, match=f"^snapshot {hand_made.pk}: "):
        release.make_release(hand_made, tmp_path / "out")
