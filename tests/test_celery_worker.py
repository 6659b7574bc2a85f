import pytest
from django.db import connection

from annotation_site.celery import health_check


@pytest.mark.celery_worker
def test_worker_sees_the_test_database(transactional_db, celery_worker_process):
    from collection.models import Dataset

    Dataset.objects.create(slug="seen-by-worker", name="seen")
    result = health_check.delay()
    answer = result.get(timeout=30)
    assert answer["database"] == connection.vendor
    assert answer["pairs"] == 0
    if celery_worker_process is not None:
        # A real worker process ran it: its log names the task.
        assert celery_worker_process.poll() is None
        assert result.id in celery_worker_process.log_path.read_text()
