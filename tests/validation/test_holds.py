"""Holds a validator can see and renew: "More time" before the end extends only
the worker's own batch, once per click and within its bound; an expired batch comes back with the
same pairs when they are still free, and never past a pair's five labels."""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from corpus.models import Label, Pair
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus
from tests import factories
from tests.present import present
from validation import batch_claims, holds, premise_labels
from validation.models import PremiseLabelClaim, ValidationClaim

from .premise_helpers import make_items
from .validation_factories import make_pair

pytestmark = pytest.mark.django_db

CLAIM_MINUTES = 20


def claims_of(batch):
    return list(ValidationClaim.objects.filter(batch=batch).order_by("id"))


def set_hold(batch, *, left, age=None, status=ClaimStatus.OPEN):
    """Move the batch's hold so it ends `left` from now (negative: it ended), claimed `age` ago."""
    now = timezone.now()
    fields = {"expires_at": now + left, "status": status}
    if age is not None:
        fields["created_at"] = now - age
    ValidationClaim.objects.filter(batch=batch).update(**fields)


@pytest.fixture
def batch_of(dataset, make_worker):
    for _ in range(6):
        make_pair(dataset, label=Label.NEUTRAL)

    def claim(worker=None):
        worker = worker or make_worker()
        return worker, batch_claims.claim_validation_batch(worker)

    return claim


def test_more_time_in_the_last_minutes_extends_the_own_batch(batch_of):
    worker, batch = batch_of()
    set_hold(batch, left=timedelta(minutes=2))
    renewed = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    assert renewed.outcome is HoldRenewal.EXTENDED
    for claim in claims_of(batch):
        assert claim.status == ClaimStatus.OPEN
        assert claim.expires_at - timezone.now() > timedelta(minutes=CLAIM_MINUTES - 1)


def test_a_double_click_extends_once(batch_of):
    worker, batch = batch_of()
    set_hold(batch, left=timedelta(minutes=2))
    first = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    second = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    assert (first.outcome, second.outcome) == (HoldRenewal.EXTENDED, HoldRenewal.UNCHANGED)
    assert second.expires_at == first.expires_at


def test_an_extension_is_given_within_the_bound(batch_of):
    worker, batch = batch_of()
    # Claimed 18 minutes ago: one period's worth of extra time is the default.
    set_hold(batch, left=timedelta(minutes=2), age=timedelta(minutes=CLAIM_MINUTES - 2))
    assert present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.EXTENDED


def test_more_time_is_bounded(batch_of):
    worker, batch = batch_of()
    # Claimed almost two periods ago and extended once (the default bound): no more time.
    set_hold(batch, left=timedelta(minutes=2), age=timedelta(minutes=2 * CLAIM_MINUTES - 2))
    renewed = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    assert renewed.outcome is HoldRenewal.AT_LIMIT
    assert claims_of(batch)[0].expires_at < timezone.now() + timedelta(minutes=3)


def test_a_second_extension_follows_the_setting(batch_of):
    worker, batch = batch_of()
    with override_settings(NLI={**settings.NLI, "HOLD_EXTENSIONS": 2}):
        set_hold(batch, left=timedelta(minutes=2), age=timedelta(minutes=2 * CLAIM_MINUTES - 2))
        renewed = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    assert renewed.outcome is HoldRenewal.EXTENDED


def test_no_extensions_when_the_settings_allow_none(batch_of):
    worker, batch = batch_of()
    with override_settings(NLI={**settings.NLI, "HOLD_EXTENSIONS": 0}):
        set_hold(batch, left=timedelta(minutes=2))
        assert present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.AT_LIMIT


def test_an_expired_batch_comes_back_with_the_same_pairs(batch_of):
    worker, batch = batch_of()
    pairs = [claim.pair_id for claim in claims_of(batch)]
    set_hold(batch, left=-timedelta(minutes=30), status=ClaimStatus.EXPIRED)
    renewed = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    assert renewed.outcome is HoldRenewal.TAKEN_BACK
    claims = claims_of(batch)
    assert [claim.pair_id for claim in claims] == pairs
    assert all(claim.status == ClaimStatus.OPEN and claim.expires_at > timezone.now() for claim in claims)
    # The pairs' count of held places sees the claims again (the claim index's hint).
    assert all(held == 1 for held in Pair.objects.filter(pk__in=pairs).values_list("held_places", flat=True))


def test_an_expired_batch_whose_pair_was_taken_does_not_come_back(batch_of, make_worker):
    worker, batch = batch_of()
    set_hold(batch, left=-timedelta(seconds=1))
    taken = claims_of(batch)[0].pair
    # Meanwhile the pair filled up: four labels and another validator's live claim on its last place.
    Pair.objects.filter(pk=taken.pk).update(label_count=4)
    other = make_worker()
    ValidationClaim.objects.create(worker=other, pair=taken, expires_at=timezone.now() + timedelta(minutes=10))
    renewed = present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS))
    assert renewed.outcome is HoldRenewal.TAKEN
    # Nothing of the batch is held again: not even its free pairs.
    assert all(claim.status == ClaimStatus.EXPIRED for claim in claims_of(batch))


def test_another_workers_batch_is_not_renewed(batch_of, make_worker):
    _, batch = batch_of()
    set_hold(batch, left=timedelta(minutes=2))
    before = [claim.expires_at for claim in claims_of(batch)]
    assert holds.renew_batch(make_worker(), batch, batch_claims.VALIDATION_CLAIMS) is None
    assert [claim.expires_at for claim in claims_of(batch)] == before


def test_a_submitted_batch_is_gone(batch_of):
    worker, batch = batch_of()
    ValidationClaim.objects.filter(batch=batch).update(status=ClaimStatus.SUBMITTED)
    assert present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.GONE


def test_an_expired_batch_stays_out_while_the_worker_holds_another(batch_of):
    worker, old = batch_of()
    set_hold(old, left=-timedelta(minutes=1), status=ClaimStatus.EXPIRED)
    new = batch_claims.claim_validation_batch(worker)
    assert new != old
    assert present(holds.renew_batch(worker, old, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.BUSY
    assert all(claim.status == ClaimStatus.EXPIRED for claim in claims_of(old))


def test_an_excluded_worker_gets_nothing_back(batch_of):
    worker, batch = batch_of()
    set_hold(batch, left=-timedelta(minutes=1))
    factories.exclude(worker)
    assert present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.GONE


def test_a_per_premise_batch_comes_back_within_its_three_judgments(make_worker):
    make_items(3)
    worker = make_worker()
    batch = present(premise_labels.claim_premise_batch(worker))
    PremiseLabelClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    renewed = present(holds.renew_batch(worker, batch, premise_labels.PREMISE_CLAIMS))
    assert renewed.outcome is HoldRenewal.TAKEN_BACK
    assert all(claim.status == ClaimStatus.OPEN for claim in PremiseLabelClaim.objects.filter(batch=batch))


# --- the pages ---------------------------------------------------------------------------------


def test_the_page_offers_the_expired_batch_back_and_it_comes_back(client, batch_of):
    worker, batch = batch_of()
    set_hold(batch, left=-timedelta(minutes=1))
    client.force_login(worker.user)
    url = reverse("validation:batch", kwargs={"batch": batch})
    page = client.get(url).content.decode()
    assert "Time ran out on these pairs" in page and "check them and send" not in page
    assert 'id="submit-batch" disabled' in page
    response = client.post(reverse("validation:batch-renew", kwargs={"batch": batch}), follow=True)
    assert response.redirect_chain[-1][0] == url
    page = response.content.decode()
    assert "these pairs again" in page and 'id="submit-batch" disabled' not in page


def test_the_page_says_once_that_taken_pairs_cannot_come_back(client, batch_of):
    worker, batch = batch_of()
    set_hold(batch, left=-timedelta(minutes=1))
    Pair.objects.filter(pk=claims_of(batch)[0].pair_id).update(label_count=5)
    client.force_login(worker.user)
    response = client.post(reverse("validation:batch-renew", kwargs={"batch": batch}), follow=True)
    page = response.content.decode()
    assert "went to other participants" in page and "Get these pairs back" not in page
    assert reverse("validation:next") in page


def test_renewal_is_a_post_of_the_own_batch(client, batch_of, make_worker):
    _, batch = batch_of()
    url = reverse("validation:batch-renew", kwargs={"batch": batch})
    client.force_login(make_worker().user)
    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 404


def test_a_grammaticality_page_comes_back_with_the_same_sentences(client, make_worker):
    from corpus.models import Dataset, LabelScheme
    from validation.models import GrammaticalityClaim

    from .test_scheme_tasks import scheme_pairs

    dataset, pairs = scheme_pairs("gram-holds", LabelScheme.TWO_WAY, n=3)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    worker = make_worker()
    client.force_login(worker.user)
    page = client.get(reverse("validation:grammaticality")).content.decode()
    assert "data-hold-countdown" in page and 'data-draft-key="grammar-' in page
    batch = GrammaticalityClaim.objects.get(worker=worker, pair=pairs[0]).batch
    GrammaticalityClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    renew = reverse("validation:grammaticality-renew", kwargs={"batch": batch})
    assert client.post(renew).status_code == 302
    claims = GrammaticalityClaim.objects.filter(batch=batch)
    assert all(claim.status == ClaimStatus.OPEN for claim in claims)
    page = client.get(reverse("validation:grammaticality")).content.decode()
    assert f'data-draft-key="grammar-{batch}"' in page
    assert sorted(int(pk) for pk in re.findall(r'name="shown" value="(\d+)"', page)) == sorted(p.pk for p in pairs)


def test_a_grammaticality_page_of_another_worker_is_not_renewed(client, make_worker):
    from corpus.models import Dataset, LabelScheme
    from validation import grammaticality

    from .test_scheme_tasks import scheme_pairs

    dataset, _ = scheme_pairs("gram-holds-2", LabelScheme.TWO_WAY, n=3)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=1)
    batch = grammaticality.claim_page(make_worker())
    client.force_login(make_worker().user)
    assert client.post(reverse("validation:grammaticality-renew", kwargs={"batch": batch})).status_code == 404
