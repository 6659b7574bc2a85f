"""The adversarial task's line shows its hold and can be renewed: "More time" in
its last minutes keeps the worker's own line; another worker's token is a 404."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collection.models import WritingClaim

from .helpers import adversarial_study
from .test_task import model, start  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db


def test_more_time_keeps_the_line_and_only_the_own(client, make_worker, model):  # noqa: F811
    study, _ = adversarial_study(target_endpoint=model.url)
    worker = make_worker()
    task, url = start(client, worker, study)
    token = task.writing_claim.token
    WritingClaim.objects.filter(token=token).update(expires_at=timezone.now() + timedelta(minutes=2))
    page = client.get(url).content.decode()
    assert "data-hold-countdown" in page and reverse("adversarial:renew", args=[token]) in page
    response = client.post(reverse("adversarial:renew", args=[token]))
    assert response.status_code == 302 and response.url == url
    assert WritingClaim.objects.get(token=token).expires_at - timezone.now() > timedelta(minutes=29)

    client.force_login(make_worker().user)
    assert client.post(reverse("adversarial:renew", args=[token])).status_code == 404
