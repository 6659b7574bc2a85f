"""base/uploads.py at the edges mutmut found unguarded: the sizes a researcher reads, the names an
upload is stored under, what removing a stored upload removes, a refusal while the body streams
(drained in pieces, the message kept for the view), and the import of a stored upload: its progress
from zero, its failure on its own row only and never on a row its restart owns now, the missing
file named."""

import io
import re
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import StopUpload

from base.uploads import (
    FAILED,
    FORM_ALLOWANCE,
    RUNNING,
    LimitedUploadHandler,
    discard_upload,
    import_upload,
    queue_upload,
    readable_size,
    size_refusal,
    stored_name,
    upload_folder,
    upload_storage,
)


@pytest.mark.parametrize(
    "size, shown",
    [
        (0, "0 bytes"),
        (1023, "1023 bytes"),
        (1024, "1 KiB"),
        (1100, "1.1 KiB"),
        (1536, "1.5 KiB"),
        (3 << 19, "1.5 MiB"),
        (1 << 30, "1 GiB"),
        (1 << 40, "1 TiB"),
        (1 << 50, "1024 TiB"),  # no larger unit: counted in TiB
    ],
)
def test_a_size_is_shown_in_the_largest_unit_under_1024_with_at_most_one_decimal(size, shown):
    assert readable_size(size) == shown


def test_a_refusal_names_the_file_or_says_the_file_and_gives_the_limit_and_its_setting(settings):
    settings.UPLOAD_MAX_BYTES = 4096
    assert size_refusal("big.txt") == (
        "big.txt is larger than the upload limit of 4 KiB (the UPLOAD_MAX_BYTES setting, 4096 bytes);"
        " nothing was uploaded or imported."
    )
    assert size_refusal("").startswith("The file is larger than the upload limit of 4 KiB")


@pytest.mark.parametrize(
    "name, kept",
    [
        ("pairs_dev.jsonl", "pairs_dev.jsonl"),
        ("my pairs (2)!.jsonl", "my_pairs_2_.jsonl"),
        ("._hidden.txt_", "hidden.txt"),
        ("Xray.tsv", "Xray.tsv"),
        ("...", "upload"),
        ("é", "upload"),
        ("x" * 200 + ".jsonl", "x" * 120),
    ],
)
def test_an_upload_is_stored_in_a_folder_of_its_own_under_a_safe_name(name, kept):
    stored = stored_name(SimpleUploadedFile(name, b"x"))
    folder, _, file_name = stored.partition("/")
    assert re.fullmatch(r"[0-9a-f]{32}", folder)
    assert file_name == kept
    assert stored_name(SimpleUploadedFile(name, b"x")).partition("/")[0] != folder  # a new folder each time


def test_removing_an_upload_removes_its_folder_and_never_the_uploads_folder(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    storage = upload_storage()
    name = storage.save("0123abcd/pairs.jsonl", ContentFile(b"x"))
    beside = storage.save("loose.jsonl", ContentFile(b"y"))

    discard_upload(name)
    discard_upload(beside)  # a file at the top: its folder is the uploads folder, kept
    discard_upload("")  # no name: nothing

    uploads = Path(storage.path(""))
    assert uploads.is_dir() and not (uploads / "0123abcd").exists()
    assert not (uploads / "loose.jsonl").exists()


def test_the_uploads_folder_is_the_data_folders_uploads(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    assert upload_folder() == tmp_path / "uploads"


class CountedBody(io.BytesIO):
    """A request body that records the size of every read."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int | None] = []

    def read(self, size: int | None = -1) -> bytes:
        self.asked.append(size)
        return super().read(size)


def streaming(rf, body_length):
    handler = LimitedUploadHandler(rf.post("/imports/"))
    body = CountedBody(b"x" * (5 * FORM_ALLOWANCE))
    handler.handle_raw_input(body, {}, body_length, "boundary")
    return handler, body


def test_a_file_over_the_limit_drains_the_body_in_pieces_and_stops_the_upload_with_the_message(rf, settings):
    settings.UPLOAD_MAX_BYTES = 4096
    handler, body = streaming(rf, body_length=8000)
    handler.new_file("file", "big.txt", "text/plain", None)
    handler.receive_data_chunk(b"x" * 4000, 0)

    with pytest.raises(StopUpload) as stopped:
        handler.receive_data_chunk(b"x" * 100, 4000)

    assert stopped.value.connection_reset  # drained already: Django reads no further
    assert body.read() == b"" and set(body.asked[:-1]) == {1 << 16}  # every piece fixed, none the whole
    assert handler.request.upload_refusal == size_refusal("big.txt")


def test_a_body_longer_than_the_limit_and_the_forms_allowance_is_refused_at_the_files_first_byte(rf, settings):
    settings.UPLOAD_MAX_BYTES = 4096
    handler, _ = streaming(rf, body_length=4096 + FORM_ALLOWANCE)
    handler.new_file("file", "at-most.txt", "text/plain", None)  # not over: the file may fit
    handler, _ = streaming(rf, body_length=4096 + FORM_ALLOWANCE + 1)
    with pytest.raises(StopUpload):
        handler.new_file("file", "over.txt", "text/plain", None)


def queued_upload(name="keeper.txt"):
    from collection.premise_uploads import queue_premise_upload
    from tests.importers.helpers import ensure_genres

    ensure_genres("fiction")
    return queue_premise_upload(SimpleUploadedFile(name, b"The keeper climbed the stairs.\n"), "fiction", "tales")


def failing(*, restarted=False, words="the import broke"):
    def run_import(row, path):
        if restarted:  # the reaper restarted the row meanwhile and a worker took it: not this run's
            type(row).objects.filter(pk=row.pk).update(restarts=row.restarts + 1, status=RUNNING)
        raise RuntimeError(words)

    return run_import


@pytest.mark.django_db
def test_a_restarted_import_starts_its_progress_from_zero():
    from collection.models import PremiseImport

    run = queued_upload()
    PremiseImport.objects.filter(pk=run.pk).update(bytes_read=500)  # a killed run's progress
    seen = []

    assert import_upload(PremiseImport, run.pk, lambda row, path: seen.append(row.bytes_read), ValueError) == run.pk
    assert seen == [0]


@pytest.mark.django_db
def test_a_failed_import_fails_its_own_row_only_also_after_a_restart():
    from collection.models import PremiseImport

    first, other = queued_upload("first.txt"), queued_upload("other.txt")
    PremiseImport.objects.filter(pk__in=[first.pk, other.pk]).update(restarts=1)  # restarted once, both
    PremiseImport.objects.filter(pk=other.pk).update(status=RUNNING)

    with pytest.raises(RuntimeError):
        import_upload(PremiseImport, first.pk, failing(), ValueError)

    first.refresh_from_db()
    assert (first.status, first.error) == (FAILED, "the import broke") and first.finished_at is not None
    assert not upload_storage().exists(first.upload)
    assert PremiseImport.objects.get(pk=other.pk).status == RUNNING


@pytest.mark.django_db
def test_a_run_whose_row_was_restarted_meanwhile_neither_fails_it_nor_removes_its_file():
    from collection.models import PremiseImport

    run = queued_upload()

    with pytest.raises(RuntimeError):
        import_upload(PremiseImport, run.pk, failing(restarted=True), ValueError)

    run.refresh_from_db()
    assert (run.status, run.restarts, run.error) == (RUNNING, 1, "")
    assert upload_storage().exists(run.upload)


@pytest.mark.django_db
def test_an_upload_gone_from_storage_is_named_in_the_rows_error():
    from collection.models import PremiseImport

    named, unnamed = queued_upload("named.txt"), queued_upload("unnamed.txt")
    upload_storage().delete(named.upload)
    PremiseImport.objects.filter(pk=unnamed.pk).update(upload="")

    assert import_upload(PremiseImport, named.pk, failing(), ValueError) is None
    assert import_upload(PremiseImport, unnamed.pk, failing(), ValueError) is None

    named.refresh_from_db()
    unnamed.refresh_from_db()
    assert named.error == f"the uploaded file is no longer in storage ({named.upload}); upload it again"
    assert unnamed.error == "the uploaded file is no longer in storage (no name); upload it again"


@pytest.mark.django_db
def test_an_error_without_words_is_named_by_its_kind_on_the_row():
    from collection.models import PremiseImport

    run = queued_upload()
    with pytest.raises(RuntimeError):
        import_upload(PremiseImport, run.pk, failing(words=""), ValueError)
    assert PremiseImport.objects.get(pk=run.pk).error == "RuntimeError"


@pytest.mark.django_db
def test_a_checks_refusal_names_the_file_as_uploaded_and_an_empty_file_is_queued_at_zero_bytes():
    from collection.models import PremiseImport

    made: list[int] = []

    def row(name: str, size: int) -> PremiseImport:
        made.append(size)
        return PremiseImport()  # its task is queued after a commit, which the test never makes

    def check(path: Path) -> None:
        raise ValueError(f"{path} line 1: not a sentence")

    with pytest.raises(ValueError, match=r"^notes\.txt line 1: not a sentence$"):
        queue_upload(SimpleUploadedFile("notes.txt", b"x"), "task", row, check=check, refusal=ValueError)
    assert made == []

    queue_upload(SimpleUploadedFile("empty.txt", b""), "task", row)
    assert made == [0]
