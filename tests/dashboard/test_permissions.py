"""Every dashboard page and JSON endpoint: anonymous -> login, worker -> 403, researcher -> 200."""

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from modeling.models import Snapshot, TrainingRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    snapshot = Snapshot.objects.create(status="done", content_hash="f" * 64)
    return TrainingRun.objects.create(snapshot=snapshot, snapshot_hash=snapshot.content_hash, model="majority")


def page_urls(run):
    return [
        reverse("dashboard:collection"),
        reverse("dashboard:validation"),
        reverse("dashboard:corpus"),
        reverse("dashboard:chart", args=["hourly"]),
        reverse("dashboard:chart", args=["lengths"]),
        reverse("dashboard:chart", args=["labels"]),
        reverse("dashboard:workers"),
        reverse("dashboard:costs"),
        reverse("dashboard:snapshots"),
        reverse("dashboard:snapshots_progress") + f"?ids={run.snapshot_id}",
        reverse("dashboard:training"),
        reverse("dashboard:training_progress") + f"?ids={run.pk}",
        reverse("dashboard:training_detail", args=[run.pk]),
    ]


def test_anonymous_visitors_are_sent_to_the_login_page(client, run):
    for url in page_urls(run):
        response = client.get(url)
        assert response.status_code == 302, url
        assert "login" in response["Location"] and "next=" in response["Location"], url


def test_workers_are_forbidden(client, make_worker, run):
    worker = make_worker()
    client.force_login(worker.user)
    for url in page_urls(run):
        assert client.get(url).status_code == 403, url
    # Nor can they start anything.
    assert client.post(reverse("dashboard:snapshots"), {}).status_code == 403
    assert (
        client.post(reverse("dashboard:training"), {"snapshot": run.snapshot_id, "model": "majority"}).status_code
        == 403
    )
    assert Snapshot.objects.count() == 1 and TrainingRun.objects.count() == 1


def test_researchers_see_every_page(client, researcher, run):
    client.force_login(researcher)
    for url in page_urls(run):
        response = client.get(url)
        assert response.status_code == 200, url


def test_inactive_staff_are_not_researchers(rf, researcher):
    """The rule itself, not Django's logout of an inactive session (which answers a 302 anyway):
    a request that carries an inactive researcher, as a token or a custom backend could, is refused."""
    from base.permissions import is_researcher
    from dashboard.views.collection import collection

    assert is_researcher(researcher)
    researcher.is_active = False
    researcher.save()
    assert not is_researcher(researcher)
    request = rf.get(reverse("dashboard:collection"))
    request.user = researcher
    with pytest.raises(PermissionDenied):
        collection(request)


def test_unknown_run_is_404(client, researcher):
    client.force_login(researcher)
    assert client.get(reverse("dashboard:training_detail", args=[999])).status_code == 404
