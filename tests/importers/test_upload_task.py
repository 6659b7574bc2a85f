"""An upload's Celery task (annotation_site.uploads.import_upload): the import's id, or None when
the import refuses the file; the upload is removed either way."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation_site.uploads import queue_upload
from importers.models import CorpusImport
from importers.services import PAIRS_UPLOAD_TASK
from importers.tasks import import_uploaded_pairs
from tests.importers.helpers import ensure_genres

ROW = (
    b'{"pairID": "1e", "promptID": "1", "sentence1": "A dog runs.", "sentence2": "An animal moves.",'
    b' "gold_label": "entailment", "annotator_labels": ["entailment"], "genre": "captions"}\n'
)


@pytest.mark.django_db
def test_the_task_answers_the_import_and_removes_the_upload(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    ensure_genres("captions")
    path = queue_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), PAIRS_UPLOAD_TASK, "up", "dev", "")
    assert path.is_file()  # queued after the commit: this test's transaction never commits
    assert import_uploaded_pairs(str(path), "up", "dev", "") == CorpusImport.objects.get().pk
    assert not path.parent.exists()


@pytest.mark.django_db
def test_an_upload_the_import_refuses_answers_none_and_is_removed(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    path = queue_upload(SimpleUploadedFile("pairs_dev.jsonl", ROW), PAIRS_UPLOAD_TASK, "up", "dev", "")
    assert import_uploaded_pairs(str(path), "up", "dev", "no-such-genre") is None
    assert not path.parent.exists() and not CorpusImport.objects.exists()
