"""The training run's admin row links to its dashboard page; the link is the dashboard's
(dashboard/admin.py), so modeling names no page above it (tests/test_layering.py)."""

import pytest
from django.urls import reverse

from modeling.models import Snapshot, TrainingRun

pytestmark = pytest.mark.django_db


def test_the_run_admin_links_to_the_runs_dashboard_page(client, researcher):
    run = TrainingRun.objects.create(snapshot=Snapshot.objects.create(datasets=["d"]), model="cbow")
    client.force_login(researcher)
    page = client.get(reverse("admin:modeling_trainingrun_changelist")).content.decode()
    assert f'href="{reverse("dashboard:training_detail", args=[run.pk])}">dashboard</a>' in page
