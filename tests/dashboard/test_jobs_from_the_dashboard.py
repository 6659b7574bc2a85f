"""Jobs from the dashboard in the embedded mode: tagging and the
artifact monitor's refresh start from the artifacts page, not only from the command line, and a
queued job says at once what it waits for (the running job in this process's one queue)."""

import pytest
from django.urls import reverse

from artifacts.models import MonitorRefresh, TaggingJob
from base.long_tasks import JobStatus
from collection.models import PremiseImport
from corpus.models import ImportStatus, Label, Split
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def embedded(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"


def test_tagging_starts_from_the_artifacts_page(client, researcher, embedded):
    dataset = factories.dataset("tags")
    factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [Label.ENTAILMENT])
    client.force_login(researcher)
    page = client.get(reverse("dashboard:artifacts"), {"dataset": "tags"}).content.decode()
    assert 'id="start-tagging"' in page and 'id="refresh-monitor"' in page
    response = client.post(reverse("dashboard:start_tagging") + "?dataset=tags", follow=True)
    job = TaggingJob.objects.get()
    assert job.dataset == dataset and f"Tagging job #{job.pk} (1 pairs) is queued" in response.content.decode()


def test_the_monitor_refresh_starts_from_the_page_and_names_what_it_waits_behind(
    client, researcher, embedded, django_capture_on_commit_callbacks
):
    dataset = factories.dataset("tags")
    running = TaggingJob.objects.create(dataset=dataset, status=JobStatus.RUNNING, total=10)
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("dashboard:refresh_monitor") + "?dataset=tags", follow=True)
    page = response.content.decode()
    assert f"waits behind the running job (tagging job #{running.pk})" in page
    assert 'id="embedded-queue"' in page
    assert MonitorRefresh.objects.filter(dataset=dataset, trigger="command").exists()  # ran inline


def test_a_queued_import_shows_in_the_embedded_queue_of_the_imports_page(client, researcher, embedded):
    dataset, genre = factories.dataset("ours"), factories.genre("fiction")
    PremiseImport.objects.create(dataset=dataset, genre=genre, source="a.txt", status=ImportStatus.RUNNING)
    PremiseImport.objects.create(dataset=dataset, genre=genre, source="b.txt", status=ImportStatus.QUEUED)
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert 'id="embedded-queue"' in page and "premise import #" in page and "1 imports" in page
