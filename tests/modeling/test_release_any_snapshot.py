"""Releases of any done snapshot: evaluation-only and held-out-genre snapshots (no train
file), typing flags, label rows chosen on the dashboard; a card whose configurations and split names
are the files' (the `datasets` library loads them with no warning); facts read from the snapshot, so
a later release of the same snapshot is the same bytes; per-annotator quality flags only on request;
releases kept in the releases storage and served from it."""

import io
import json
import logging
import warnings
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse

from authorship.models import WritingEvidence
from base.file_storage import file_storage, local_path, object_storage_aliases
from corpus.models import Dataset, Label, Split, ValidationLabel
from corpus.services import add_labels
from crowd.models import Study
from importers.services import import_pairs_file
from modeling import release
from modeling.models import Snapshot
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.conftest import S3_KEY, S3_REGION, require_package, shared_file
from tests.importers.helpers import ensure_genres
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
QUALITY = ("flags", "catch_trials_seen", "catch_trials_matched")


@pytest.fixture
def hf():
    return require_package("datasets", "pip install -r requirements-dev.txt (datasets)")


def load_quietly(hf, folder, *config, cache):
    """`datasets.load_dataset(folder[, config])`, and every warning or log record at WARNING or
    above that the load gave (the library says so when it ignores part of a card)."""
    records: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Kept(level=logging.WARNING)
    logger = logging.getLogger("datasets")
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = hf.load_dataset(str(folder), *config, cache_dir=str(cache))
    finally:
        logger.removeHandler(handler)
    return loaded, [str(w.message) for w in caught] + [record.getMessage() for record in records]


def card_header(folder):
    text = (Path(folder) / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n", 2)[1]), text


def card_splits(meta, config):
    (entry,) = [c for c in meta["configs"] if c["config_name"] == config]
    return [item["split"] for item in entry["data_files"]]


def done(datasets, **filters):
    return export_snapshot(create_snapshot(None, datasets=datasets, filters=filters))


def released_files(folder):
    folder = Path(folder)
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_an_evaluation_only_snli_dev_snapshot_is_released_and_datasets_loads_its_dev_split_without_a_warning(
    hf, tmp_path
):
    ensure_genres("captions")
    report = import_pairs_file(shared_file("snli_1.0_dev.jsonl"), "snli")
    assert report.ok and report.split == "dev", report.summary()
    snapshot = done(["snli"])
    assert [f.name for f in snapshot.files.order_by("name")] == ["dev.jsonl", "dev.tsv"]  # no train file

    made = release.make_release(snapshot, tmp_path / "snli-dev")
    assert made["splits"] == {"pairs": {"dev": 10000}}
    loaded, problems = load_quietly(hf, tmp_path / "snli-dev", cache=tmp_path / "cache")
    assert problems == []
    assert {split: len(rows) for split, rows in loaded.items()} == {"dev": 10000}
    meta, text = card_header(tmp_path / "snli-dev")
    assert card_splits(meta, "pairs") == ["dev"] and [c["config_name"] for c in meta["configs"]] == ["pairs"]
    # Counted from the files: SNLI dev's published figures (../shared/data/README.md).
    assert "| dev | 158 | 3,278 | 3,329 | 3,235 |" in text  # gold columns: -, contradiction, entailment, neutral
    assert "| dev | 10,000 | 9,986 |" in text and "| 0.867 |" in text  # individual = gold 86.71%
    with open(shared_file("snli_1.0_dev.jsonl"), encoding="utf-8") as handle:
        first = json.loads(handle.readline())
    row = loaded["dev"].filter(lambda r: r["pairID"] == first["pairID"])[0]
    assert (row["sentence1"], row["sentence2"], row["gold_label"]) == (
        first["sentence1"],
        first["sentence2"],
        first["gold_label"],
    )


@pytest.fixture
def held_out(make_worker):
    """Dev and test only (no train), fiction a training genre and letters held out: the snapshot's
    files are dev_matched, dev_mismatched, test_matched and test_mismatched."""
    dataset = Dataset.objects.create(slug="held-out", name="Held-out genres")
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    pairs = [
        add_pair(dataset, add_premise(dataset, g, split, f"{split} premise {i}."), f"{split} hypothesis {i}.", [E])
        for i, (g, split) in enumerate(
            [
                (fiction, Split.DEV),
                (letters, Split.DEV),
                (letters, Split.DEV),
                (fiction, Split.TEST),
                (letters, Split.TEST),
            ]
        )
    ]
    for worker, label in zip((make_worker() for _ in range(4)), [E, E, N, C], strict=True):
        add_labels([(pair, label) for pair in pairs], worker=worker, seconds=8.0)
    return pairs


def test_a_held_out_genres_snapshot_without_train_loads_by_the_files_split_names_with_no_warning(
    held_out, hf, tmp_path
):
    snapshot = done(["held-out"], label_rows=True)
    out = tmp_path / "release"
    made = release.make_release(snapshot, out)
    names = ["dev_matched", "dev_mismatched", "test_matched", "test_mismatched"]
    assert list(made["splits"]["pairs"]) == names
    meta, _ = card_header(out)
    pairs, problems = load_quietly(hf, out, cache=tmp_path / "c1")
    assert problems == []
    assert {split: len(rows) for split, rows in pairs.items()} == dict(zip(names, [1, 2, 1, 1], strict=True))
    assert card_splits(meta, "pairs") == list(pairs) == names  # the card's names are the loader's
    labels, problems = load_quietly(hf, out, "labels", cache=tmp_path / "c2")
    assert problems == []
    assert {split: len(rows) for split, rows in labels.items()} == dict(zip(names, [5, 10, 5, 5], strict=True))
    assert card_splits(meta, "labels") == list(labels) == names
    for info in meta["dataset_info"]:  # every split entry complete, so the library keeps it
        assert all({"name", "num_bytes", "num_examples"} <= set(split) for split in info["splits"])


@pytest.fixture
def train_and_dev(make_worker):
    """Two train pairs and one dev pair with five labels each: an ordinary snapshot's files are
    train.jsonl and dev.jsonl (the tests below need a train split so that only their own point differs)."""
    dataset = Dataset.objects.create(slug="plain", name="Plain NLI")
    fiction = genre("fiction")
    pairs = [
        add_pair(
            dataset, add_premise(dataset, fiction, split, f"{split} premise {i}."), f"{split} hypothesis {i}.", [E]
        )
        for i, split in enumerate([Split.TRAIN, Split.TRAIN, Split.DEV])
    ]
    for worker, label in zip((make_worker() for _ in range(4)), [E, E, N, C], strict=True):
        add_labels([(pair, label) for pair in pairs], worker=worker, seconds=8.0)
    return pairs


def test_a_train_and_dev_snapshot_loads_as_train_and_dev_with_no_warning_about_the_cards_splits(
    train_and_dev, hf, tmp_path
):
    out = tmp_path / "release"
    release.make_release(done(["plain"], label_rows=True), out)
    meta, text = card_header(out)
    for config in ("pairs", "labels"):
        loaded, problems = load_quietly(hf, out, config, cache=tmp_path / config)
        # The library warns (and drops the card's split list) when a split entry lacks num_bytes.
        assert problems == [], problems
        assert list(loaded) == card_splits(meta, config) == ["train", "dev"]  # "dev", never "validation"
    assert "| pairs | dev | 1 |" in text and "| validation |" not in text  # the card's table names it so too


def test_a_snapshot_with_typing_flags_is_released_with_the_flags_as_a_list_of_strings(make_worker, hf, tmp_path):
    dataset = Dataset.objects.create(slug="typed", name="typed")
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, split, f"A premise {i}."), f"Hypothesis {i}.", [E])
        for i, split in enumerate([Split.DEV, Split.DEV, Split.DEV, Split.TRAIN])
    ]
    writer = make_worker()
    WritingEvidence.objects.create(
        pair=pairs[0], worker=writer, field_name="hypothesis", has_evidence=True, flags=["pasted"], flagged=True
    )
    add_labels([(pair, N) for pair in pairs], worker=make_worker(), seconds=5.0)
    snapshot = done(["typed"], typing_flags=True)

    out = tmp_path / "release"
    release.make_release(snapshot, out)
    labels, problems = load_quietly(hf, out, "labels", cache=tmp_path / "c")
    assert problems == []
    assert labels["dev"].features["typing_flags"].feature.dtype == "string"
    authors = [row for row in labels["dev"] if row["role"] == "author"]
    assert sorted(tuple(row["typing_flags"]) for row in authors) == [(), (), ("pasted",)]
    assert labels["train"].features["typing_flags"].feature.dtype == "string"
    meta, _ = card_header(out)
    (info,) = [i for i in meta["dataset_info"] if i["config_name"] == "labels"]
    assert {"name": "typing_flags", "list": "string"} in info["features"]


def test_a_snapshot_without_label_rows_gets_a_card_that_names_no_labels_configuration(train_and_dev, hf, tmp_path):
    out = tmp_path / "release"
    release.make_release(done(["plain"]), out)
    meta, text = card_header(out)
    assert [c["config_name"] for c in meta["configs"]] == ["pairs"]
    assert "labels" not in {i["config_name"] for i in meta["dataset_info"]}
    assert '"labels")' not in text and "labels configuration" not in text
    assert not (out / "labels").exists()
    with pytest.raises(ValueError, match="labels"):  # the library knows no such configuration
        hf.load_dataset(str(out), "labels", cache_dir=str(tmp_path / "c"))


@pytest.fixture
def rated(make_worker):
    """Twelve dev pairs and one train pair; a fast validator labels all in 1 s each (the quality checks
    flag them: too fast), a careful one six in 20 s. A study pays for validation."""
    dataset = Dataset.objects.create(slug="rated", name="Rated NLI")
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, Split.DEV, f"A premise {i}."), f"Hypothesis {i}.", [E])
        for i in range(12)
    ]
    pairs.append(add_pair(dataset, add_premise(dataset, fiction, Split.TRAIN, "A train premise."), "Train.", [E]))
    fast, careful = make_worker(external_id="FASTSECRET01"), make_worker(external_id="CAREFULSECRET")
    add_labels([(pair, E) for pair in pairs], worker=fast, seconds=1.0)
    add_labels([(pair, N) for pair in pairs[:6]], worker=careful, seconds=20.0)
    Study.objects.create(
        slug="rated-validation", name="v", dataset=dataset, task_kind="validation", payment_per_task="1.00"
    )
    return dataset, pairs


def test_per_annotator_quality_flags_are_published_only_when_the_researcher_asks(rated, hf, tmp_path):
    snapshot = done(["rated"], label_rows=True)
    plain, flagged = tmp_path / "plain", tmp_path / "flagged"
    release.make_release(snapshot, plain)
    rows, problems = load_quietly(hf, plain, "labels", cache=tmp_path / "c1")
    assert not set(QUALITY) & set(rows["dev"].column_names), "quality columns published by default"
    assert problems == []
    _, text = card_header(plain)
    assert "Per-annotator quality records are not published (the default)" in text and "too fast" not in text

    release.make_release(snapshot, flagged, quality_flags=True)
    rows, problems = load_quietly(hf, flagged, "labels", cache=tmp_path / "c2")
    assert problems == [] and set(QUALITY) <= set(rows["dev"].column_names)
    assert {tuple(row["flags"]) for row in rows["dev"] if row["seconds"] == 1.0} == {("too fast",)}
    _, text = card_header(flagged)
    assert "published, pseudonymously, at the researcher's request" in text
    for folder in (plain, flagged):
        content = b"".join(released_files(folder).values())
        assert b"FASTSECRET01" not in content and b"CAREFULSECRET" not in content


def test_a_release_made_after_the_database_changed_is_byte_identical_to_the_first(rated, make_worker, tmp_path):
    dataset, pairs = rated
    snapshot = done(["rated"], label_rows=True)
    release.make_release(snapshot, tmp_path / "first")
    first = released_files(tmp_path / "first")

    # A week of work later: more labels, a new pair, a study paid more, the dataset renamed.
    add_labels([(pair, C) for pair in pairs[6:]], worker=make_worker(), seconds=30.0)
    add_pair(dataset, add_premise(dataset, genre("travel"), Split.DEV, "A new premise."), "New.", [E, E, E])
    Study.objects.filter(slug="rated-validation").update(payment_per_task="2.50")
    Dataset.objects.filter(pk=dataset.pk).update(name="Renamed NLI")
    assert ValidationLabel.objects.filter(pair__dataset=dataset).count() > 12 + 12 + 6

    release.make_release(snapshot, tmp_path / "second")
    second = released_files(tmp_path / "second")
    assert (
        list(second)
        == list(first)
        == [
            "README.md",
            "labels/dev.parquet",
            "labels/train.parquet",
            "pairs/dev.parquet",
            "pairs/train.parquet",
        ]
    )
    for path in first:
        assert second[path] == first[path], path
    assert "# Rated NLI" in first["README.md"].decode() and "1.00 USD per task" in first["README.md"].decode()


def test_the_dashboard_offers_label_rows_and_typing_flags_and_makes_a_release_into_the_storage(
    held_out, client, researcher, hf, tmp_path, settings, django_capture_on_commit_callbacks
):
    # The export runs in this process in both passes (with a broker too): this test is about the
    # form's options and the release, not about the queue (tests/test_celery_worker.py is).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    client.force_login(researcher)
    page = client.get(reverse("dashboard:snapshots")).content.decode()
    assert 'name="label_rows"' in page and 'name="typing_flags"' in page
    with django_capture_on_commit_callbacks(execute=True):  # the export is queued on commit
        client.post(reverse("dashboard:snapshots"), {"datasets": ["held-out"], "label_rows": "on"})
    snapshot = Snapshot.objects.latest("pk")
    assert snapshot.status == "done" and snapshot.filters.get("label_rows") is True
    assert "labels.jsonl" in {f.name for f in snapshot.files.all()}

    answer = client.post(reverse("dashboard:snapshot_release"), {"snapshot": snapshot.pk, "name": "held-out-v1"})
    assert answer.status_code == 302
    storage = file_storage("releases")
    assert storage.exists("held-out-v1/README.md") and storage.exists("held-out-v1/labels/dev_matched.parquet")
    stored_at = local_path(storage, "held-out-v1")
    assert stored_at is not None  # the local default storage: a folder on this disk
    folder = Path(stored_at)
    labels, problems = load_quietly(hf, folder, "labels", cache=tmp_path / "c")
    assert problems == [] and len(labels["dev_mismatched"]) == 10

    page = client.get(reverse("dashboard:snapshots")).content.decode()
    link = f"{reverse('dashboard:release_file')}?release=held-out-v1&amp;path=README.md"
    assert link in page
    served = client.get(link.replace("&amp;", "&"))
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == (folder / "README.md").read_bytes()
    assert client.get(f"{reverse('dashboard:release_file')}?release=held-out-v1&path=../x").status_code == 404

    # The same name again is refused with the reason, and nothing stored changes.
    before = released_files(folder)
    answer = client.post(
        reverse("dashboard:snapshot_release"), {"snapshot": snapshot.pk, "name": "held-out-v1"}, follow=True
    )
    assert "a release named &#x27;held-out-v1&#x27; exists already" in answer.content.decode()
    assert released_files(folder) == before


def test_a_release_is_made_from_the_snapshot_storage_on_a_host_without_its_folder_and_stored_in_s3(
    held_out, s3_storage, hf, tmp_path, settings
):
    """Nothing is deleted in this test, on disk or in the bucket: "another host" is a fresh DATA_DIR
    under tmp_path, and "a host whose storage lacks the snapshot" is a second, empty bucket."""
    snapshot = done(["held-out"], label_rows=True)
    assert f"snapshots/{snapshot.pk}/manifest.json" in s3_storage.keys_under(f"snapshots/{snapshot.pk}/")
    # Another host: its own empty disk, and no export folder of this snapshot on it.
    settings.DATA_DIR = tmp_path / "other-host"
    settings.SNAPSHOT_DIR = tmp_path / "other-host" / "snapshots"
    Snapshot.objects.filter(pk=snapshot.pk).update(directory=str(tmp_path / "not-on-this-host"))
    snapshot.refresh_from_db()

    call_command("make_release", str(snapshot.pk), "--name", "from-s3", stdout=io.StringIO())
    keys = s3_storage.keys_under("releases/from-s3/")
    assert "releases/from-s3/README.md" in keys and "releases/from-s3/labels/test_mismatched.parquet" in keys
    assert not (tmp_path / "other-host" / "releases").exists()  # nothing of the release on this host's disk
    local = tmp_path / "downloaded"
    for name, _size in release.release_files("from-s3"):
        target = local / name
        target.parent.mkdir(parents=True, exist_ok=True)
        opened = release.open_release_file("from-s3", name)
        assert opened is not None, name
        with opened as handle:
            target.write_bytes(handle.read())
    pairs, problems = load_quietly(hf, local, cache=tmp_path / "c")
    assert problems == [] and len(pairs["dev_mismatched"]) == 2

    # A storage that does not hold the snapshot's files: refused with the reason, not a traceback.
    settings.STORAGES = {
        **settings.STORAGES,
        **object_storage_aliases(
            s3_storage.server.new_bucket(),
            endpoint_url=s3_storage.server.endpoint_url,
            region=S3_REGION,
            access_key=S3_KEY,
            secret_key=S3_KEY,
        ),
    }
    with pytest.raises(release.ReleaseError, match="missing from storage"):
        release.make_release(snapshot, tmp_path / "gone")


def test_bad_release_requests_are_refused_with_their_reason_and_store_nothing(held_out, tmp_path):
    snapshot = done(["held-out"])
    with pytest.raises(release.ReleaseError, match="not a release name"):
        release.publish_release(snapshot, "../escape")
    with pytest.raises(release.ReleaseError, match="not a license id"):
        release.publish_release(snapshot, "ok-name", license_id="CC BY; rm -rf")
    assert release.release_names() == []
    release.publish_release(snapshot, "ok-name")
    assert release.release_names() == ["ok-name"]
