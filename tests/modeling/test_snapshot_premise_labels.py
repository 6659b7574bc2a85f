"""MPE's per-premise labels (§5.2) in snapshots: `premise_labels.tsv`, written by validation's rows
through the writer the composition root registers (annotation_site.wiring.SNAPSHOT_EXTRA_FILES into
modeling.snapshots.extra_files), since modeling may not import validation (tests/test_layering.py)."""

import hashlib
from pathlib import Path

import pytest
from django.core.management import call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from base.long_tasks import JobStatus
from corpus.models import Dataset, Label, Split
from modeling.models import SnapshotFile
from modeling.snapshots.format import content_hash, read_manifest, verify_snapshot
from modeling.snapshots.services import create_snapshot, export_snapshot, snapshot_directory
from tests.modeling.conftest import FIVE_E, add_pair, add_premise, genre
from tests.present import present
from tests.validation.premise_helpers import make_items
from validation import premise_labels
from validation.models import PremisePair
from validation.snapshot_files import PREMISE_LABELS_FILE

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


def judge(items, make_worker, labels=(E, N, C)):
    """Every premise of these items gets one judgment from each of len(labels) workers."""
    workers = [make_worker() for _ in labels]
    for item in items:
        for premise_pair in PremisePair.objects.filter(item=item).order_by("index"):
            for worker, label in zip(workers, labels, strict=True):
                premise_labels.add_premise_labels(worker, {premise_pair.pk: label})


def command_export(tmp_path, dataset, *split):
    out = tmp_path / f"command-{'-'.join(split) or 'all'}.tsv"
    call_command("export_mpe_premise_labels", str(out), "--dataset", dataset.slug, "--no-progress", *split)
    return out.read_bytes()


@pytest.fixture
def judged_mpe(make_worker):
    """Dataset mpe-spe: two dev items and one train item, every premise judged; one dev item's
    premises with two judgments only (the export keeps them, short)."""
    dataset, dev_items = make_items(2, golds=[E, C])
    _, train_items = make_items(1, split=Split.TRAIN, golds=[N], start=2)
    judge(dev_items[:1] + train_items, make_worker)
    judge(dev_items[1:], make_worker, labels=(C, C))
    return dataset


def test_a_snapshot_of_a_judged_mpe_split_holds_the_command_export_of_that_split(judged_mpe, tmp_path):
    snapshot = export_snapshot(create_snapshot(None, datasets=["mpe-spe"], filters={"splits": ["dev"]}))
    assert snapshot.status == JobStatus.DONE
    folder = Path(snapshot.directory)
    written = (folder / PREMISE_LABELS_FILE).read_bytes()
    assert written == command_export(tmp_path, judged_mpe, "--split", "dev")
    assert written != command_export(tmp_path, judged_mpe)  # the train item's premises are left out

    manifest = read_manifest(folder)
    # The file's checksum is in the content hash like the others (verify_snapshot wants a train file).
    assert content_hash(manifest["files"]) == manifest["content_hash"] == snapshot.content_hash
    (entry,) = [f for f in manifest["files"] if f["name"] == PREMISE_LABELS_FILE]
    assert entry["rows"] == 8 == written.count(b"\n") - 1  # two dev items of four premises; the header
    assert entry["sha256"] == hashlib.sha256(written).hexdigest() and entry["bytes"] == len(written)
    assert manifest["rows"] == 2  # the pairs, not the premise pairs
    stored = SnapshotFile.objects.get(snapshot=snapshot, name=PREMISE_LABELS_FILE)
    assert (stored.rows, stored.sha256) == (8, entry["sha256"])


def test_without_a_split_filter_the_file_is_the_command_export_of_every_split(judged_mpe, tmp_path):
    snapshot = export_snapshot(create_snapshot(None, datasets=["mpe-spe"]))
    written = (Path(snapshot.directory) / PREMISE_LABELS_FILE).read_bytes()
    assert written == command_export(tmp_path, judged_mpe)
    assert {f["name"] for f in read_manifest(snapshot.directory)["files"]} == {
        "dev.jsonl",
        "dev.tsv",
        "train.jsonl",
        "train.tsv",
        PREMISE_LABELS_FILE,
    }


def test_the_snapshot_file_api_serves_it(judged_mpe, researcher):
    snapshot = export_snapshot(create_snapshot(None, datasets=["mpe-spe"], filters={"splits": ["dev"]}))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    detail = api.get(f"/api/snapshots/{snapshot.pk}/").json()
    (entry,) = [f for f in detail["files"] if f["name"] == PREMISE_LABELS_FILE]
    download = api.get(entry["url"])
    assert download.status_code == 200
    # djangorestframework-stubs type APIClient's responses as DRF Responses; a file comes as Django's FileResponse.
    data = b"".join(download.streaming_content)  # type: ignore[attr-defined]
    assert data == (Path(snapshot.directory) / PREMISE_LABELS_FILE).read_bytes()
    assert download["X-Content-SHA256"] == entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_a_single_premise_snapshot_has_no_premise_label_file(judged_mpe):
    dataset = Dataset.objects.create(slug="snli-like", name="SNLI-like")
    add_pair(dataset, add_premise(dataset, genre("captions"), "dev", "Two dogs run."), "Dogs run.", FIVE_E)
    snapshot = export_snapshot(create_snapshot(None, datasets=["snli-like"]))
    assert snapshot.status == JobStatus.DONE
    names = {f["name"] for f in read_manifest(snapshot.directory)["files"]}
    assert names == {"dev.jsonl", "dev.tsv"}
    assert not (Path(snapshot.directory) / PREMISE_LABELS_FILE).exists()


def test_a_multi_premise_snapshot_without_judgments_in_its_splits_has_no_premise_label_file(make_worker):
    """Marked is not judged: the file is there once a split of the snapshot has a judgment."""
    dataset, _ = make_items(1)  # marked, nobody has judged it
    make_items(1, split=Split.TRAIN, start=1)
    snapshot = export_snapshot(create_snapshot(None, datasets=[dataset.slug]))
    assert PREMISE_LABELS_FILE not in {f["name"] for f in read_manifest(snapshot.directory)["files"]}
    train_pair = present(PremisePair.objects.filter(item__premise__split=Split.TRAIN).first())
    premise_labels.add_premise_labels(make_worker(), {train_pair.pk: E})
    dev_only = export_snapshot(create_snapshot(None, datasets=[dataset.slug], filters={"splits": ["dev"]}))
    assert PREMISE_LABELS_FILE not in {f["name"] for f in read_manifest(dev_only.directory)["files"]}


def test_a_snapshot_built_with_no_provider_still_works(judged_mpe):
    with_file = export_snapshot(create_snapshot(None, datasets=["mpe-spe"]))
    without = export_snapshot(create_snapshot(None, datasets=["mpe-spe"]), extra_files=())
    assert without.status == JobStatus.DONE
    manifest = verify_snapshot(without.directory)
    assert {f["name"] for f in manifest["files"]} == {"dev.jsonl", "dev.tsv", "train.jsonl", "train.tsv"}
    for name in ("dev.jsonl", "train.tsv"):  # the pairs' files do not depend on the provider
        assert (Path(without.directory) / name).read_bytes() == (Path(with_file.directory) / name).read_bytes()
    assert without.content_hash != with_file.content_hash


def test_an_extra_file_may_not_replace_a_split_file(judged_mpe):
    def clobber(datasets, filters, directory):
        (directory / "dev.tsv").write_text("not the pairs\n")
        return {"dev.tsv": 1}

    snapshot = create_snapshot(None, datasets=["mpe-spe"])
    with pytest.raises(ValueError, match=r"dev\.tsv"):
        export_snapshot(snapshot, extra_files=(clobber,))
    snapshot.refresh_from_db()
    assert snapshot.status == JobStatus.FAILED and "dev.tsv" in snapshot.error
    assert not snapshot_directory(snapshot).exists()
