"""A release a downstream user can load: the real `datasets` library loads the Parquet
files, by folder and by the card's configs, and its rows equal the snapshot's JSONL export; the
card carries the Hub's YAML header and the datasheet; two releases of the same data are the same bytes."""

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.management import call_command

from corpus.models import Dataset, Label, Split, StoppingPolicy, StoppingRule
from corpus.services import add_labels
from crowd.models import Study
from modeling.release import QUALITY_COLUMNS, ReleaseError, make_release
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import add_pair, add_premise, genre

datasets = pytest.importorskip("datasets")
pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


@pytest.fixture
def corpus(make_worker):
    dataset = Dataset.objects.create(slug="release-me", name="Release Me NLI")
    fiction, travel = genre("fiction"), genre("travel", is_training=False)
    for i in range(4):
        add_pair(
            dataset, add_premise(dataset, fiction, Split.TRAIN, f"Train premise {i}."), f"Train hypothesis {i}.", [E]
        )
    dev = [
        add_pair(dataset, add_premise(dataset, g, Split.DEV, f"Dev premise {i} “quoted”."), f"Dev hypothesis {i}.", [N])
        for i, g in enumerate([fiction, fiction, travel])
    ]
    validators = [make_worker(market="prolific", external_id=f"PROLIFIC{i:04d}") for i in range(4)]
    for worker, label in zip(validators, [N, N, E, C], strict=True):
        add_labels([(pair, label) for pair in dev], worker=worker, seconds=12.0)
    Study.objects.create(
        slug="release-validation", name="v", dataset=dataset, task_kind="validation", payment_per_task="1.50"
    )
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.FIXED)
    return dataset


def snapshot(**filters):
    made = export_snapshot(create_snapshot(None, datasets=["release-me"], filters=filters))
    return made


def jsonl(path):
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def header(card_text):
    assert card_text.startswith("---\n")
    return yaml.safe_load(card_text.split("---\n", 2)[1])


def test_datasets_loads_the_release_by_folder_and_by_its_configs_and_the_rows_equal_the_jsonl(corpus, tmp_path):
    snap = snapshot(label_rows=True)
    out = tmp_path / "release"
    made = make_release(snap, out)
    assert made["splits"]["pairs"] == {"dev": 3, "train": 4}
    folder = Path(snap.directory)
    by_folder = datasets.load_dataset("parquet", data_dir=str(out / "pairs"), cache_dir=str(tmp_path / "cache"))
    by_config = datasets.load_dataset(str(out), "pairs", cache_dir=str(tmp_path / "cache2"))
    for split, rows in made["splits"]["pairs"].items():
        expected = jsonl(folder / f"{split}.jsonl")
        assert len(expected) == rows
        assert by_config[split].to_list() == expected
    assert sorted(row["pairID"] for split in by_folder for row in by_folder[split]) == sorted(
        row["pairID"] for split in made["splits"]["pairs"] for row in jsonl(folder / f"{split}.jsonl")
    )
    labels = datasets.load_dataset(str(out), "labels", cache_dir=str(tmp_path / "cache3"))
    all_labels = jsonl(folder / "labels.jsonl")
    assert sum(len(labels[split]) for split in labels) == len(all_labels) == 4 + 3 * 5
    published = [{k: v for k, v in row.items() if k not in QUALITY_COLUMNS} for row in all_labels]
    assert labels["dev"].to_list() == [row for row in published if row["split"] == "dev"]
    assert "PROLIFIC" not in (out / "README.md").read_text(encoding="utf-8")


def test_the_card_has_the_hubs_header_and_a_datasheet_from_the_records(corpus, tmp_path):
    out = tmp_path / "release"
    make_release(snapshot(), out)
    text = (out / "README.md").read_text(encoding="utf-8")
    meta = header(text)
    assert meta["license"] == "cc-by-sa-4.0" and meta["task_ids"] == ["natural-language-inference"]
    assert [config["config_name"] for config in meta["configs"]] == ["pairs"]
    assert meta["configs"][0]["default"] is True
    info = meta["dataset_info"][0]
    assert {"name": "annotator_labels", "list": "string"} in info["features"]
    assert {split["name"]: split["num_examples"] for split in info["splits"]} == {"dev": 3, "train": 4}
    for fact in (
        "# Release Me NLI",
        "| Travel (`travel`) |",
        "validators (workers with a validation label): 4",
        "Study `release-validation` (validation): 1.50 USD per task, median hourly pay 90.00 USD",
        "Stopping rule: release-me dev: fixed.",
        "Krippendorff's α (nominal) covers the 3 pairs with at least two labels",
        "huggingface-cli upload",
    ):
        assert fact in text, fact


def test_two_releases_of_the_same_data_are_byte_identical(corpus, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    make_release(snapshot(label_rows=True), first)
    make_release(snapshot(label_rows=True), second)  # another snapshot of the same data
    files = sorted(path.relative_to(first) for path in first.rglob("*") if path.is_file())
    assert [str(path) for path in files] == sorted(
        str(path.relative_to(second)) for path in second.rglob("*") if path.is_file()
    )
    assert len(files) == 5  # README.md, two pair files, two label files
    for path in files:
        assert (first / path).read_bytes() == (second / path).read_bytes(), path


def test_a_release_of_an_unfinished_snapshot_or_into_a_used_folder_is_refused(corpus, tmp_path):
    pending = create_snapshot(None, datasets=["release-me"])
    with pytest.raises(ReleaseError, match="finished"):
        make_release(pending, tmp_path / "x")
    used = tmp_path / "used"
    used.mkdir()
    (used / "old.txt").write_text("old")
    with pytest.raises(ReleaseError, match="not empty"):
        make_release(snapshot(), used)


def test_make_release_command_writes_the_files(corpus, tmp_path, capsys):
    snap = snapshot()
    call_command("make_release", str(snap.pk), "--out", str(tmp_path / "cmd"))
    printed = capsys.readouterr().out
    assert "README.md" in printed and "pairs/train.parquet" in printed


@pytest.mark.parametrize("with_dataset", [True, False])
def test_the_arrow_tally_of_a_pair_table_counts_what_the_row_by_row_tally_counts(with_dataset):
    """The release counts a split's genres, gold labels, datasets and label patterns with Arrow;
    `SplitTally.add`, row by row, says what they are, whatever the rows hold."""
    pa = pytest.importorskip("pyarrow")
    from modeling.datasheet import SplitTally
    from modeling.release import tally_table

    rows: list[dict[str, Any]] = [
        {"annotator_labels": [E, E, E, N, E], "genre": "fiction", "gold_label": E, "dataset": "a"},
        {"annotator_labels": [E, E, E, N, E], "genre": "fiction", "gold_label": E, "dataset": "a"},
        {"annotator_labels": [N, C], "genre": "", "gold_label": "", "dataset": None},
        {"annotator_labels": [], "genre": None, "gold_label": None, "dataset": "b"},
        {"annotator_labels": None, "genre": "travel", "gold_label": "-", "dataset": ""},
        {"annotator_labels": ["", "a\x1fb", None], "genre": "travel", "gold_label": C, "dataset": "b"},
        {"annotator_labels": [C] * 6, "genre": "travel", "gold_label": C, "dataset": "b"},
        {"annotator_labels": [""], "genre": "travel", "gold_label": C, "dataset": "b"},
    ]
    if not with_dataset:
        rows = [{key: value for key, value in row.items() if key != "dataset"} for row in rows]
    table = pa.Table.from_pylist(rows)
    by_row, by_table = SplitTally({}), SplitTally({})
    for row in rows:
        by_row.add(row)
    tally_table(pa, table, by_table)
    assert by_table.patterns == by_row.patterns and len(by_row.patterns) == 6
    assert by_table.figures() == by_row.figures()
