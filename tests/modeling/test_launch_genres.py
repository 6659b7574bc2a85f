"""Options that cannot work are refused at launch with the reason, not found by a worker later."""

import html

import pytest
from django.urls import reverse

from modeling.models import TrainingRun

pytestmark = pytest.mark.django_db


def test_a_genre_that_cannot_be_trained_on_is_refused_at_launch(client, researcher, small_corpus):
    from modeling.snapshots.services import create_snapshot, export_snapshot

    snapshot = export_snapshot(create_snapshot(researcher, datasets=["mini"]))
    client.force_login(researcher)
    for genre, reason in (("cooking", "unknown train_genre 'cooking'"), ("letters", "has no training pairs")):
        response = client.post(
            reverse("dashboard:training"),
            {"snapshot": snapshot.pk, "model": "cbow", "options": f'{{"train_genre": "{genre}"}}'},
        )
        assert response.status_code == 400 and reason in html.unescape(response.content.decode()), genre
    assert not TrainingRun.objects.exists()
