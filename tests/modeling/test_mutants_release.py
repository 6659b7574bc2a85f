"""The releases storage's edges that mutmut found unguarded in modeling/release.py: where a release is
built (a scratch folder of its snapshot under DATA_DIR, made with its parents and removed after), the
card stored last so a release is listed only once every file is in, a name another publisher took
meanwhile (refused by name, only our own files removed), the quality flags as asked (off unless
asked), the card first among a release's files, which folders are releases (a valid name with a
card), which names are taken (an empty one is none; one ending in "X" is found), and what a
published release records: its team, who published it and how."""

from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage

from audit.models import AuditEntry
from base.file_storage import file_storage
from corpus.models import Dataset, Label, Split
from corpus.services import add_labels
from modeling import release
from modeling.snapshots.services import create_snapshot, export_snapshot
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db

E, N = Label.ENTAILMENT.value, Label.NEUTRAL.value


@pytest.fixture
def snapshot(make_worker):
    """A done snapshot of two dev pairs, each labelled by two validators, with its label rows."""
    dataset = Dataset.objects.create(slug="small", name="Small NLI")
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, Split.DEV, f"A premise {i}."), f"Hypothesis {i}.", [E])
        for i in range(2)
    ]
    for worker, label in ((make_worker(), E), (make_worker(), N)):
        add_labels([(pair, label) for pair in pairs], worker=worker, seconds=8.0)
    return export_snapshot(create_snapshot(None, datasets=["small"], filters={"label_rows": True}))


def test_a_release_is_built_in_a_scratch_folder_of_its_snapshot_under_a_new_data_dir_then_removed(
    snapshot, settings, tmp_path, monkeypatch
):
    settings.DATA_DIR = tmp_path / "new-host" / "var"  # neither it nor its parent exists yet
    built_in: list[Path] = []
    make = release.make_release

    def watched(snapshot, out, **options):
        built_in.append(Path(out).parent)
        return make(snapshot, out, **options)

    monkeypatch.setattr(release, "make_release", watched)

    release.publish_release(snapshot, "first")

    (scratch,) = built_in
    assert scratch.parent == Path(settings.DATA_DIR), "on the data disk, beside the storage"
    assert scratch.name.startswith(f".release-{snapshot.pk}-")
    assert not scratch.exists(), "removed once stored"
    assert release.release_names() == ["first"]


def test_the_card_is_stored_last_so_a_release_is_listed_only_once_every_file_is_in(snapshot, monkeypatch):
    stored: list[tuple[str, list[str]]] = []
    save = FileSystemStorage.save

    def recorded(storage, name, content, max_length=None):
        stored.append((name, release.release_names()))
        return save(storage, name, content, max_length=max_length)

    monkeypatch.setattr(FileSystemStorage, "save", recorded)

    made = release.publish_release(snapshot, "whole")

    assert len(stored) == len(made["files"]) > 2
    assert stored[-1][0] == f"whole/{release.README}"
    assert all(listed == [] for _, listed in stored), "not listed while its files were being stored"
    assert release.release_names() == ["whole"]


def test_a_name_another_publisher_took_meanwhile_is_refused_and_only_our_files_are_removed(snapshot, monkeypatch):
    storage = file_storage("releases")
    make = release.make_release

    def raced(snapshot, out, **options):
        made = make(snapshot, out, **options)
        storage.save(f"taken/{release.README}", ContentFile(b"their card"))  # after our name was checked
        return made

    monkeypatch.setattr(release, "make_release", raced)

    with pytest.raises(release.ReleaseError) as refused:
        release.publish_release(snapshot, "taken")

    assert str(refused.value) == f"the releases storage already held taken/{release.README}; choose another name"
    assert release._stored_names("taken") == [release.README], "ours removed, theirs kept"
    with storage.open(f"taken/{release.README}") as theirs:
        assert theirs.read() == b"their card"


def test_per_annotator_quality_flags_are_stored_only_when_asked(snapshot):
    storage = file_storage("releases")

    release.publish_release(snapshot, "plain")
    release.publish_release(snapshot, "flagged", quality_flags=True)

    with storage.open(f"plain/{release.README}") as card:
        assert "Per-annotator quality records are not published (the default)" in card.read().decode()
    with storage.open(f"flagged/{release.README}") as card:
        assert "Per-annotator quality records (`flags`" in card.read().decode()
    published = AuditEntry.objects.filter(action=release.PUBLISHED).order_by("pk")
    assert [entry.after["quality_flags"] for entry in published] == [False, True]


def test_a_releases_files_list_the_card_first_then_the_data_files_by_path(snapshot):
    made = release.publish_release(snapshot, "listed")

    files = release.release_files("listed")

    assert [path for path, _ in files] == [release.README, *sorted(p for p in made["files"] if p != release.README)]
    assert all(size > 0 for _, size in files)


def test_only_a_folder_with_a_release_name_and_a_card_is_a_release(snapshot):
    storage = file_storage("releases")
    release.publish_release(snapshot, "complete")
    storage.save("half-stored/pairs/dev.parquet", ContentFile(b"no card yet"))
    storage.save(f"-not-a-name/{release.README}", ContentFile(b"a card"))

    assert release.release_names() == ["complete"]


def test_a_published_release_is_its_snapshots_teams_and_its_audit_entry_says_who_what_and_how(snapshot, researcher):
    release.publish_release(snapshot, "audited", license_id="cc-by-4.0", by=researcher)

    (entry,) = AuditEntry.objects.filter(action=release.PUBLISHED)
    assert (entry.actor, entry.subject_type, entry.subject_id) == (
        researcher.username,
        "modeling.snapshot",
        str(snapshot.pk),
    )
    assert entry.after == {"name": "audited", "license": "cc-by-4.0", "quality_flags": False}
    assert entry.dataset_slugs == ["small"]
    assert snapshot.team_id is not None and release.release_team("audited") == snapshot.team_id


def test_an_empty_name_is_no_release_name():
    with pytest.raises(release.ReleaseError, match="is not a release name"):
        release.check_release_name("")


def test_a_taken_name_ending_in_x_is_found_in_the_storage_and_refused(snapshot):
    release.publish_release(snapshot, "BOX")

    assert release.release_files("BOX")[0][0] == release.README
    with pytest.raises(release.ReleaseError, match="a release named 'BOX' exists already; choose another name"):
        release.publish_release(snapshot, "BOX")
