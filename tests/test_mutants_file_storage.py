"""base/file_storage.py at the edges mutmut found unguarded: each kind's local folder follows its
own setting, the local storage is that folder (built per call), an unknown kind is refused by
name, the S3 aliases are one bucket with each kind its key prefix and the connection as given, and
a name already stored in object storage is never replaced."""

from pathlib import Path
from typing import cast

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage

from base.file_storage import (
    FILE_KINDS,
    FileKind,
    file_storage,
    is_shared,
    local_folder,
    local_path,
    object_storage_aliases,
)


@pytest.fixture
def separate_folders(settings, tmp_path):
    """SNAPSHOT_DIR and CHECKPOINT_DIR outside DATA_DIR, as a host with its own disks sets them."""
    settings.DATA_DIR = tmp_path / "data"
    settings.SNAPSHOT_DIR = tmp_path / "snapshot-disk"
    settings.CHECKPOINT_DIR = tmp_path / "weights-disk"
    return tmp_path


def test_each_kind_has_the_local_folder_its_own_setting_names(separate_folders):
    """Fails if snapshots or checkpoints are kept under DATA_DIR instead of SNAPSHOT_DIR/CHECKPOINT_DIR."""
    assert local_folder("snapshots") == separate_folders / "snapshot-disk"
    assert local_folder("checkpoints") == separate_folders / "weights-disk"
    assert local_folder("uploads") == separate_folders / "data" / "uploads"
    assert local_folder("releases") == separate_folders / "data" / "releases"


@pytest.mark.parametrize("kind", FILE_KINDS)
def test_without_object_storage_a_kind_is_stored_in_its_local_folder(separate_folders, kind):
    """Fails if a kind's files land anywhere but its local folder, or are taken for shared ones."""
    storage = file_storage(kind)
    assert isinstance(storage, FileSystemStorage) and not is_shared(kind)
    name = storage.save("12/part.txt", ContentFile(b"kept"))
    stored = local_folder(kind) / "12" / "part.txt"
    assert name == "12/part.txt" and stored.read_bytes() == b"kept"
    assert local_path(storage, name) == storage.path(name) == str(stored)


def test_the_local_storage_follows_a_data_dir_changed_after_an_earlier_call(settings, tmp_path):
    """Fails if the local storage keeps the folder of the settings it was first built with."""
    settings.DATA_DIR = tmp_path / "first"
    assert file_storage("releases").path("r1/manifest.json") == str(
        tmp_path / "first" / "releases" / "r1/manifest.json"
    )
    settings.DATA_DIR = tmp_path / "second"
    assert file_storage("releases").path("r1/manifest.json") == str(
        tmp_path / "second" / "releases" / "r1/manifest.json"
    )


def test_an_unknown_kind_is_refused_by_name_even_when_a_storage_of_that_name_is_configured(settings, tmp_path):
    """Fails if a kind outside the four is served, or refused without saying which kind."""
    settings.STORAGES = {
        **settings.STORAGES,
        "models": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path)}},
    }
    with pytest.raises(ValueError, match=r"^unknown kind of file: 'models'$"):
        file_storage(cast(FileKind, "models"))
    with pytest.raises(ValueError, match=r"^unknown kind of file: 'models'$"):
        is_shared(cast(FileKind, "models"))  # not "shared" because a storage of that name is configured


def test_the_aliases_are_one_bucket_each_kind_its_prefix_with_the_connection_given():
    """Fails if an alias names another backend, loses a connection value, or lets a name be overwritten."""
    aliases = object_storage_aliases(
        "nli-lab",
        endpoint_url="https://minio.example.org:9000",
        region="eu-west-1",
        access_key="AKID",
        secret_key="SECRET",
    )
    assert set(aliases) == set(FILE_KINDS)
    for kind in FILE_KINDS:
        assert aliases[kind] == {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": "nli-lab",
                "endpoint_url": "https://minio.example.org:9000",
                "region_name": "eu-west-1",
                "access_key": "AKID",
                "secret_key": "SECRET",
                "default_acl": None,
                "file_overwrite": False,
                "location": kind,
            },
        }


def test_empty_connection_values_are_left_to_boto3s_defaults():
    """Fails if an empty OBJECT_STORAGE_* variable reaches boto3 as "" instead of "not set"."""
    options = object_storage_aliases("nli-lab", endpoint_url="", region="", access_key="", secret_key="")["uploads"][
        "OPTIONS"
    ]
    assert [options[key] for key in ("endpoint_url", "region_name", "access_key", "secret_key")] == [None] * 4


def test_a_name_already_in_object_storage_is_never_replaced(s3_storage):
    """Fails if a second save under a stored snapshot file's name overwrites that file."""
    storage = file_storage("snapshots")
    assert is_shared("snapshots") and local_path(storage, "7/train.jsonl") is None
    first = storage.save("7/train.jsonl", ContentFile(b"first"))
    second = storage.save("7/train.jsonl", ContentFile(b"second"))
    assert first == "7/train.jsonl" and second != first and Path(second).parent == Path("7")
    with storage.open(first, "rb") as kept:
        assert kept.read() == b"first"
    assert s3_storage.keys_under("snapshots/") == sorted([f"snapshots/{first}", f"snapshots/{second}"])


def test_each_kind_is_kept_under_its_own_prefix_of_the_bucket(s3_storage):
    """Fails if a kind's files are written outside its key prefix, where another kind's could collide."""
    for kind in FILE_KINDS:
        file_storage(kind).save("same/name.txt", ContentFile(kind.encode()))
    for kind in FILE_KINDS:
        assert s3_storage.keys_under(f"{kind}/") == [f"{kind}/same/name.txt"]
        with file_storage(kind).open("same/name.txt", "rb") as stored:
            assert stored.read() == kind.encode()
