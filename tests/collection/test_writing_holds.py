"""A writer sees their line's hold and can renew it: "More time" in the last
minutes extends only their own claim, once per click; a line whose hold ran out comes back while it
is free and not once someone else has it."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collection import holds, writing_claims
from collection.models import WritingClaim
from corpus.models import Premise, PremiseStatus
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db


@pytest.fixture
def writer(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    worker = make_worker()
    return worker, writing_claims.claim_next_premise(worker, dataset=dataset), dataset


def hold_ends_in(claim, delta):
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() + delta)


def test_more_time_in_the_last_minutes_and_a_double_click_extends_once(writer):
    worker, claim, _ = writer
    hold_ends_in(claim, timedelta(minutes=1))
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.EXTENDED
    claim.refresh_from_db()
    end = claim.expires_at
    assert end - timezone.now() > timedelta(minutes=29)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.UNCHANGED
    claim.refresh_from_db()
    assert claim.expires_at == end


def test_an_expired_line_comes_back_while_it_is_free(writer):
    worker, claim, _ = writer
    hold_ends_in(claim, -timedelta(minutes=5))
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.TAKEN_BACK
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN and claim.expires_at > timezone.now()


def test_a_line_someone_else_took_does_not_come_back(writer, make_worker):
    worker, claim, dataset = writer
    hold_ends_in(claim, -timedelta(minutes=5))
    others = Premise.objects.filter(dataset=dataset).exclude(pk=claim.premise_id)
    others.update(status=PremiseStatus.HELD)
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise_id == claim.premise_id
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.TAKEN
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.EXPIRED


def test_another_workers_line_is_not_renewed(writer, make_worker):
    _, claim, _ = writer
    hold_ends_in(claim, timedelta(minutes=1))
    assert holds.renew_writing_hold(make_worker(), claim.token) is None
    claim.refresh_from_db()
    assert claim.expires_at < timezone.now() + timedelta(minutes=2)


def test_the_page_shows_the_hold_and_more_time_keeps_the_line(client, writer):
    worker, claim, _ = writer
    client.force_login(worker.user)
    hold_ends_in(claim, timedelta(minutes=2))
    page = client.get(reverse("writing_task", args=[claim.token])).content.decode()
    assert 'id="hold-more-time"' in page and "data-hold-countdown" in page
    response = client.post(reverse("writing_renew", args=[claim.token]), follow=True)
    assert response.redirect_chain[-1][0] == reverse("writing_task", args=[claim.token])
    assert "more time" in response.content.decode()
    assert client.get(reverse("writing_renew", args=[claim.token])).status_code == 405


def test_the_expired_page_offers_the_line_back(client, writer):
    worker, claim, _ = writer
    client.force_login(worker.user)
    hold_ends_in(claim, -timedelta(minutes=1))
    page = client.get(reverse("writing_task", args=[claim.token])).content.decode()
    assert reverse("writing_renew", args=[claim.token]) in page and "Get this line back" in page
    response = client.post(reverse("writing_renew", args=[claim.token]))
    assert response.status_code == 302 and response.url == reverse("writing_task", args=[claim.token])
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN and claim.expires_at > timezone.now()
