"""Imports from the dashboard: a researcher uploads premise files and corpus files; the
upload is checked at once (a refusal is said and nothing is queued), imported by the Celery worker
with the commands' rules, and listed with its progress and report."""

from itertools import islice

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from base.uploads import upload_folder
from collection.models import PremiseImport
from corpus.models import Pair, Premise
from importers.models import CorpusImport
from tests.conftest import shared_file, wait_for
from tests.importers.helpers import ensure_genres


def finished(model):
    def check():
        run = model.objects.order_by("-pk").first()
        return run if run is not None and run.status in ("done", "failed") else None

    return check


def leftover_uploads():
    folder = upload_folder()
    return sorted(folder.iterdir()) if folder.exists() else []


@pytest.fixture
def on_the_workers_disk(settings, celery_worker_process):
    """One host: the web side (this test) and the session's Celery worker share DATA_DIR, so the
    worker finds the upload in the local "uploads" storage (no worker here: tasks run in-process)."""
    if celery_worker_process is not None:
        settings.DATA_DIR = celery_worker_process.data_dir
    return celery_worker_process


def snli_slice(lines=60):
    """The first lines of SNLI dev, with one line broken on purpose (line 7)."""
    with open(shared_file("snli_1.0_dev.jsonl"), encoding="utf-8") as handle:
        rows = list(islice(handle, lines))
    rows[6] = rows[6][: len(rows[6]) // 2] + "\n"
    return "".join(rows).encode()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_corpus_file_uploaded_is_imported_with_its_report_and_progress(on_the_workers_disk, client, researcher):
    ensure_genres("captions")
    before = leftover_uploads()
    client.force_login(researcher)
    upload = SimpleUploadedFile("snli_1.0_dev.jsonl", snli_slice(), content_type="application/jsonl")
    response = client.post(reverse("dashboard:imports"), {"kind": "pairs", "file": upload, "dataset": "snli-up"})
    assert response.status_code == 302
    run = wait_for(finished(CorpusImport), timeout=90, message="the corpus import")
    assert run.status == "done", run.error
    assert (run.split, run.pairs_created, run.malformed_count) == ("dev", 59, 1)
    assert run.problems[0][0] == 7  # the broken line, by number
    assert Pair.objects.filter(dataset__slug="snli-up").count() == 59
    live = client.get(reverse("dashboard:imports_progress", args=["pairs"]), {"ids": run.pk}).json()["items"][0]
    assert live["finished"] and live["progress"] == 1.0 and f'id="corpus-import-{run.pk}"' in live["html"]
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert "snli_1.0_dev.jsonl" in page and "line 7:" in page
    assert leftover_uploads() == before  # the upload is gone once imported


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_premise_file_uploaded_is_imported_into_its_genre(on_the_workers_disk, client, researcher):
    ensure_genres("fiction")
    client.force_login(researcher)
    text = (
        "The lighthouse keeper climbed the stairs every evening at dusk.\n\n"
        "Her sister kept the ledger of every ship that passed the point.\n\n"
        "ok\n"
    )
    upload = SimpleUploadedFile("keeper.txt", text.encode(), content_type="text/plain")
    client.post(
        reverse("dashboard:imports"), {"kind": "premises", "file": upload, "genre": "fiction", "dataset": "tales"}
    )
    run = wait_for(finished(PremiseImport), timeout=90, message="the premise import")
    assert run.status == "done", run.error
    assert run.kept == Premise.objects.filter(dataset__slug="tales", genre__slug="fiction").count() == 2
    assert run.dropped == 1  # "ok" is no premise, and says why on the page
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert "keeper.txt" in page and f'id="premise-import-{run.pk}"' in page


@pytest.mark.django_db
@pytest.mark.parametrize(
    "form, name, content, said",
    [
        (
            {"kind": "premises", "genre": "fiction", "dataset": "up"},
            "photo.txt",
            b"GIF89a\x00\x00binary",
            "not a text file",
        ),
        ({"kind": "premises", "genre": "no-such-genre", "dataset": "up"}, "a.txt", b"A sentence here.", "genre"),
        ({"kind": "pairs", "dataset": "up"}, "pairs.jsonl", b"{}", "Cannot tell the split of pairs.jsonl"),
        ({"kind": "pairs", "dataset": "no spaces!"}, "x_dev.jsonl", b"{}", "Name the dataset"),
        ({"kind": "pairs", "dataset": "up", "genre": "nope"}, "x_dev.jsonl", b"{}", "Unknown genre"),
    ],
)
def test_an_upload_the_import_would_refuse_is_refused_at_once_and_nothing_is_kept(
    client, researcher, form, name, content, said
):
    ensure_genres("fiction")
    before = leftover_uploads()
    client.force_login(researcher)
    upload = SimpleUploadedFile(name, content)
    page = client.post(reverse("dashboard:imports"), {**form, "file": upload}, follow=True).content.decode()
    assert said in page and name in page
    assert not PremiseImport.objects.exists() and not CorpusImport.objects.exists()
    assert leftover_uploads() == before


@pytest.mark.django_db
def test_only_researchers_import(client, make_worker):
    client.force_login(make_worker().user)
    upload = SimpleUploadedFile("a.txt", b"A sentence that could be a premise.")
    assert client.post(reverse("dashboard:imports"), {"kind": "premises", "file": upload}).status_code == 403
    assert client.get(reverse("dashboard:imports")).status_code == 403
    assert client.get(reverse("dashboard:imports_progress", args=["pairs"])).status_code == 403
