"""The imports page's uploads: a file over UPLOAD_MAX_BYTES is refused
while it streams, with a message naming the limit and the setting, and nothing is kept; an upload
accepted is listed queued, with what it waits for, the moment the page answers (before, no row
existed until a worker had started the import: "its progress is below", and no row for minutes)."""

import html

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from base.long_tasks import JobStatus
from base.uploads import upload_storage
from collection.models import PremiseImport
from corpus.models import ImportStatus
from dashboard.queries.imports import waiting_text
from importers.models import CorpusImport
from modeling.models import Snapshot
from modeling.snapshots.services import create_snapshot
from tests.importers.helpers import ensure_genres

TEXT = b"The lighthouse keeper climbed the stairs every evening at dusk.\n"


def stored_uploads():
    storage = upload_storage()
    return sorted(storage.listdir("")[0]) if storage.exists("") else []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "size, where",
    [(3 << 20, "the body's length says so: refused at the file's first byte"), (6000, "refused mid-stream")],
)
def test_a_file_over_the_limit_is_refused_with_a_message_naming_the_limit_and_the_setting(
    client, researcher, settings, size, where
):
    settings.UPLOAD_MAX_BYTES = 4096
    ensure_genres("fiction")
    client.force_login(researcher)
    big = SimpleUploadedFile("big.txt", (TEXT * (size // len(TEXT) + 1))[:size])
    form = {"kind": "premises", "genre": "fiction", "file": big}
    page = client.post(reverse("dashboard:imports"), form, follow=True).content.decode()
    assert "big.txt is larger than the upload limit of 4 KiB (the UPLOAD_MAX_BYTES setting, 4096 bytes)" in page
    assert "nothing was uploaded or imported" in page
    assert not PremiseImport.objects.exists() and stored_uploads() == []


@pytest.mark.django_db
def test_a_file_at_the_limit_is_taken(client, researcher, settings, django_capture_on_commit_callbacks):
    settings.UPLOAD_MAX_BYTES = len(TEXT)
    ensure_genres("fiction")
    client.force_login(researcher)
    with django_capture_on_commit_callbacks():
        client.post(
            reverse("dashboard:imports"),
            {"kind": "premises", "genre": "fiction", "file": SimpleUploadedFile("a.txt", TEXT)},
        )
    assert PremiseImport.objects.get().status == ImportStatus.QUEUED


@pytest.mark.django_db
def test_the_page_states_the_limit(client, researcher, settings):
    settings.UPLOAD_MAX_BYTES = 3 * 1024**3 // 2
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert "Files up to 1.5 GiB (the <code>UPLOAD_MAX_BYTES</code> setting)" in page


@pytest.mark.django_db
def test_an_upload_is_listed_queued_with_what_it_waits_for_the_moment_the_page_answers(
    client, researcher, django_capture_on_commit_callbacks
):
    ensure_genres("fiction", "captions")
    export = create_snapshot(None)
    Snapshot.objects.filter(pk=export.pk).update(status=JobStatus.RUNNING)  # a job the workers are busy with
    client.force_login(researcher)
    with django_capture_on_commit_callbacks() as queued:  # sent after the commit; no worker has taken it
        answer = client.post(
            reverse("dashboard:imports"),
            {
                "kind": "premises",
                "genre": "fiction",
                "dataset": "tales",
                "file": SimpleUploadedFile("keeper.txt", TEXT),
            },
            follow=True,
        )
    run = PremiseImport.objects.get()
    assert len(queued) == 1 and f"keeper.txt is queued for import as #{run.pk}" in answer.content.decode()
    page = client.get(reverse("dashboard:imports")).content.decode()
    row = page[page.index(f'id="premise-import-{run.pk}"') :]
    row = row[: row.index("</tr>")]
    assert 'data-status="queued"' in row and "keeper.txt" in row
    # What it waits for, in the mode the suite runs in (a Celery worker, or the embedded mode's
    # one in-process queue): the running export named either way.
    assert html.escape(waiting_text([f"snapshot #{export.pk} (export)"])) in row

    Snapshot.objects.filter(pk=export.pk).update(status=JobStatus.DONE)
    live = client.get(reverse("dashboard:imports_progress", args=["premises"]), {"ids": run.pk}).json()["items"][0]
    assert live["status"] == "queued" and not live["finished"]
    assert html.escape(waiting_text([])) in live["html"]


@pytest.mark.django_db
def test_a_corpus_upload_is_listed_queued_at_once(client, researcher, django_capture_on_commit_callbacks):
    ensure_genres("captions")
    client.force_login(researcher)
    row = b'{"pairID": "1e", "promptID": "1", "sentence1": "A dog runs.", "sentence2": "It moves.", "gold_label": "entailment"}\n'
    with django_capture_on_commit_callbacks():
        client.post(
            reverse("dashboard:imports"),
            {"kind": "pairs", "dataset": "snli-up", "file": SimpleUploadedFile("snli_1.0_dev.jsonl", row)},
        )
    run = CorpusImport.objects.get()
    assert (run.status, run.split, run.dataset.slug) == (ImportStatus.QUEUED, "dev", "snli-up")
    assert f'id="corpus-import-{run.pk}"' in client.get(reverse("dashboard:imports")).content.decode()
