"""What the read-only admins of snapshots and validation claims show in their computed columns: a
snapshot's progress as a whole percentage and the first 12 characters of its content hash, each of
its files with a link to the API's download of that file, and a claim's pair as its pairID and the
first eight words of its hypothesis."""

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from modeling.models import Snapshot, SnapshotFile
from tests.validation.validation_factories import make_dataset, make_pair
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db


def test_a_snapshot_shows_its_progress_its_short_hash_and_a_link_to_each_file(admin_client: Any) -> None:
    snapshot = Snapshot.objects.create(status="running", progress=0.456, content_hash="0123456789abcdef" * 4)
    SnapshotFile.objects.create(snapshot=snapshot, name="dev_matched.jsonl", split="dev", rows=3, bytes=10, sha256="f")

    listed = admin_client.get(reverse("admin:modeling_snapshot_changelist")).content.decode()
    assert '<td class="field-progress_percent">46%</td>' in listed
    assert '<td class="field-short_hash">0123456789ab</td>' in listed

    page = admin_client.get(reverse("admin:modeling_snapshot_change", args=[snapshot.pk])).content.decode()
    link = f'<a href="/api/snapshots/{snapshot.pk}/files/dev_matched.jsonl">dev_matched.jsonl</a>'
    assert link in page


def test_a_claim_shows_its_pair_by_pair_id_and_the_start_of_its_hypothesis(admin_client: Any, make_worker: Any) -> None:
    pair = make_pair(make_dataset())
    pair.hypothesis = "one two three four five six seven eight nine ten"
    pair.save(update_fields=["hypothesis"])
    ValidationClaim.objects.create(worker=make_worker(), pair=pair, expires_at=timezone.now() + timedelta(minutes=20))

    listed = admin_client.get(reverse("admin:validation_validationclaim_changelist")).content.decode()
    assert f'<td class="field-pair_id_text">{pair.pair_id}: one two three four five six seven eight…</td>' in listed
