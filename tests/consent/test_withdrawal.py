"""A participant withdraws; their claims go back at once, the visit closes,
and their contributions follow the study's policy; nobody else loses work."""

import pytest
from django.test import Client
from django.urls import reverse

from consent import registry, services
from consent.models import RemovalState, Withdrawal
from corpus.models import Label
from crowd.models import ClaimStatus, ContributionsOnWithdrawal, StudySession
from tests.validation.validation_factories import item_field
from validation.models import ValidationClaim

from .helpers import agree, arrive, validation_study

pytestmark = pytest.mark.django_db


def claim_a_batch(client, study, participant):
    session = arrive(client, study, participant)
    agree(client, study)
    batch_url = client.get(reverse("validation:next"))["Location"]
    assert "/validate/batch/" in batch_url
    return session, batch_url


def test_every_participant_page_has_the_withdraw_link(client):
    study = validation_study()
    _, batch_url = claim_a_batch(client, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    page = client.get(batch_url).content.decode()
    assert 'id="withdraw-link"' in page and reverse("consent:withdraw") in page


def test_no_withdraw_link_outside_a_study(client, make_worker):
    validation_study()
    client.force_login(make_worker().user)
    assert 'id="withdraw-link"' not in client.get(reverse("home")).content.decode()


def test_withdrawal_mid_batch_releases_only_the_own_claims_and_others_submit(client):
    study = validation_study(pairs=12)
    leaving, _ = claim_a_batch(client, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    staying_client = Client()
    staying, staying_batch = claim_a_batch(staying_client, study, "bbbbbbbbbbbbbbbbbbbbbbbb")
    assert client.get(reverse("consent:withdraw")).status_code == 200
    assert not Withdrawal.objects.exists()  # the GET only asks

    response = client.post(reverse("consent:withdraw"))
    assert response.status_code == 200 and "You have withdrawn" in response.content.decode()

    withdrawal = Withdrawal.objects.get(study_session=leaving)
    own = ValidationClaim.objects.filter(study_session=leaving)
    assert withdrawal.claims_released == own.count() > 0
    assert set(own.values_list("status", flat=True)) == {ClaimStatus.RELEASED}
    leaving.refresh_from_db()
    assert leaving.closed_at is not None and leaving.ended_as == "withdrawn"
    assert leaving.closed_reason == services.WITHDRAWN_REASON
    assert withdrawal.policy == ContributionsOnWithdrawal.KEEP and withdrawal.removal == RemovalState.NOT_ASKED
    assert withdrawal.market_note.startswith("market not told: no API")
    # The other participant's batch is untouched, and their submit counts.
    others = ValidationClaim.objects.filter(study_session=staying)
    assert set(others.values_list("status", flat=True)) == {ClaimStatus.OPEN}
    answers = {item_field(claim.pair_id, staying.worker): Label.NEUTRAL for claim in others}
    submitted = staying_client.post(staying_batch, answers)
    assert submitted.status_code == 302
    assert set(others.values_list("status", flat=True)) == {ClaimStatus.SUBMITTED}
    staying.refresh_from_db()
    assert staying.tasks_done == 1 and staying.closed_at is None
    # The one who withdrew is given no task again, and told why.
    refused = client.get(reverse("validation:next"))
    assert refused.status_code == 403 and "You have withdrawn" in refused.content.decode()


def test_withdrawing_twice_records_one_withdrawal(client):
    study = validation_study()
    session, _ = claim_a_batch(client, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    client.post(reverse("consent:withdraw"))
    client.post(reverse("consent:withdraw"))
    assert Withdrawal.objects.filter(study_session=session).count() == 1
    assert 'id="withdraw-link"' not in client.get(reverse("home")).content.decode()


def test_a_deleting_study_waits_for_the_removal_engine_until_one_is_registered(client):
    study = validation_study(contributions_on_withdrawal=ContributionsOnWithdrawal.DELETE)
    session, _ = claim_a_batch(client, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    before = registry.contribution_remover()
    registry._registered.clear()
    try:
        client.post(reverse("consent:withdraw"))
        withdrawal = Withdrawal.objects.get(study_session=session)
        assert (withdrawal.policy, withdrawal.removal) == (ContributionsOnWithdrawal.DELETE, RemovalState.WAITING)
        removed: list[int] = []

        def remover(study_session: StudySession) -> str:
            removed.append(study_session.pk)
            return "removed 0 labels"

        registry.register_contribution_remover(remover)
        assert services.remove_withdrawn_contributions(withdrawal)
        withdrawal.refresh_from_db()
        assert removed == [session.pk] and withdrawal.removal == RemovalState.DONE and withdrawal.removed_at
    finally:
        registry._registered[:] = [before] if before else []


def test_the_withdraw_page_outside_a_study_says_so(client, make_worker):
    client.force_login(make_worker().user)
    response = client.post(reverse("consent:withdraw"))
    assert response.status_code == 200 and "not taking part in a study" in response.content.decode()
    assert not Withdrawal.objects.exists()


def test_the_researcher_sees_withdrawals_on_the_study_page(client, researcher):
    study = validation_study()
    participant = Client()
    claim_a_batch(participant, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    participant.post(reverse("consent:withdraw"))
    client.force_login(researcher)
    page = client.get(reverse("dashboard:study", args=[study.slug])).content.decode()
    assert 'id="table-withdrawals"' in page and "aaaaaaaaaaaaaaaaaaaaaaaa" in page
    assert "Information sheet version 1" in page


def test_a_deleting_study_takes_the_withdrawn_labels_out_at_once(client):
    """The composition root registers the erasure engine: a withdrawal from a study whose policy
    deletes contributions takes the participant's labels out and recounts their pairs in the
    withdrawal's transaction."""
    from corpus.models import Pair, ValidationLabel

    study = validation_study(pairs=12, contributions_on_withdrawal=ContributionsOnWithdrawal.DELETE)
    session, batch_url = claim_a_batch(client, study, "aaaaaaaaaaaaaaaaaaaaaaaa")
    claims = ValidationClaim.objects.filter(study_session=session)
    labelled = sorted(claims.values_list("pair_id", flat=True))
    counts_before = dict(Pair.objects.filter(pk__in=labelled).values_list("pk", "label_count"))
    answers = {item_field(claim.pair_id, session.worker): Label.NEUTRAL for claim in claims}
    assert client.post(batch_url, answers).status_code == 302
    assert ValidationLabel.objects.filter(worker=session.worker).count() == len(labelled) > 0
    client.post(reverse("consent:withdraw"))
    withdrawal = Withdrawal.objects.get(study_session=session)
    assert withdrawal.removal == RemovalState.DONE and "labels" in withdrawal.removal_note
    assert not ValidationLabel.objects.filter(worker=session.worker).exists()
    assert dict(Pair.objects.filter(pk__in=labelled).values_list("pk", "label_count")) == counts_before
