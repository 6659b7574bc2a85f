"""A writer whose time ran out loses nothing: the answer says so (409, not a 200 that saves
nothing), gives the sentences back, and sends them to the same line if it is still free, or to a
fresh task with the sentences kept for copying."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collection import writing_claims
from collection.models import WritingClaim
from corpus.models import Pair, Premise, PremiseStatus
from crowd.models import ClaimStatus
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def writer(client, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    worker = make_worker()
    client.force_login(worker.user)
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    return client, worker, claim, dataset


def test_an_expired_submit_is_a_409_that_gives_the_sentences_back(writer):
    client, _, claim, _ = writer
    response = client.post(reverse("writing_task", args=[claim.token]), GOOD)
    page = response.content.decode()
    assert response.status_code == 409
    assert "nothing was saved yet" in page
    for text in GOOD.values():
        assert text in page
    assert reverse("writing_resubmit", args=[claim.token]) in page
    assert not Pair.objects.exists()


def test_resubmitted_sentences_go_to_the_same_line_while_it_is_free(writer):
    client, worker, claim, _ = writer
    response = client.post(reverse("writing_resubmit", args=[claim.token]), GOOD)
    assert response.status_code == 302 and response.url == reverse("writing_next")
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.SUBMITTED
    assert sorted(
        Pair.objects.filter(premise=claim.premise, author=worker).values_list("hypothesis", flat=True)
    ) == sorted(GOOD.values())


def test_a_line_taken_meanwhile_gets_a_fresh_task_with_the_sentences_to_copy(writer, make_worker):
    client, _worker, claim, dataset = writer
    other = make_worker()
    # Never-claimed premises are served before a freed one (claims_made): set the other aside.
    others = Premise.objects.filter(dataset=dataset).exclude(pk=claim.premise_id)
    others.update(status=PremiseStatus.HELD)
    taken = present(writing_claims.claim_next_premise(other, dataset=dataset))
    assert taken.premise_id == claim.premise_id  # the freed line went to someone else
    others.update(status=PremiseStatus.AVAILABLE)
    response = client.post(reverse("writing_resubmit", args=[claim.token]), GOOD, follow=True)
    page = response.content.decode()
    assert "gone to someone else" in page
    assert 'id="orphan-sentences"' in page and all(text in page for text in GOOD.values())
    assert (
        response.redirect_chain[-1][0].startswith("/write/") and str(claim.token) not in response.redirect_chain[-1][0]
    )
    assert not Pair.objects.exists()
    # The sentences are shown once, not on every page after.
    assert 'id="orphan-sentences"' not in client.get(response.redirect_chain[-1][0]).content.decode()


def test_a_used_claim_cannot_be_renewed(writer):
    _client, worker, claim, _ = writer
    WritingClaim.objects.filter(pk=claim.pk).update(status=ClaimStatus.SUBMITTED)
    with pytest.raises(writing_claims.ClaimAlreadySubmitted):
        writing_claims.renew_expired_claim(worker, claim.token)


def test_coming_back_after_the_hold_ran_out_reopens_the_same_line(writer):
    # The typed sentences wait in the browser under this claim's token; a new claim would lose them.
    client, worker, claim, _dataset = writer
    response = client.get(reverse("writing_next"))
    assert response.status_code == 302 and response["Location"] == reverse("writing_task", args=[claim.token])
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN and claim.expires_at > timezone.now()
    assert WritingClaim.objects.filter(worker=worker).count() == 1


def test_coming_back_when_the_line_went_to_someone_else_gives_a_new_line(writer, make_worker):
    client, worker, claim, dataset = writer
    other = make_worker()
    # The other writer takes the freed line (the never-claimed one set aside meanwhile).
    others = Premise.objects.filter(dataset=dataset).exclude(pk=claim.premise_id)
    others.update(status=PremiseStatus.HELD)
    taken = present(writing_claims.claim_next_premise(other, dataset=dataset))
    assert taken.premise_id == claim.premise_id
    others.update(status=PremiseStatus.AVAILABLE)
    response = client.get(reverse("writing_next"))
    fresh = WritingClaim.objects.get(worker=worker, status=ClaimStatus.OPEN)
    assert response["Location"] == reverse("writing_task", args=[fresh.token])
    assert fresh.premise_id != claim.premise_id
