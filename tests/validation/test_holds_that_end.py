"""Holds that end: twenty ids kept a study's last 70 pairs for eight claim periods
by "More time" and "Get these pairs back". A batch is taken back at most HOLD_TAKE_BACKS times, and
neither more time nor a take-back is given while another participant of the study waits for work
(told "no task" within the last claim period, holding nothing since)."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from corpus.models import LABELS_PER_PAIR, Label, Pair
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests.present import present
from validation import batch_claims, holds
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db

CLAIM_MINUTES = 20
PROLIFIC = {"STUDY_ID": "61aa11bb22cc33dd44ee55ff"}


@pytest.fixture
def study():
    dataset = make_dataset("holds-end")
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL)
    Pair.objects.update(label_count=LABELS_PER_PAIR - 1)  # one place left on each: the study's tail
    return Study.objects.create(
        slug="holds-end",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code="HOLDS-END",
        catch_trial_share=0,
    )


def visit(study, worker):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")


@pytest.fixture
def holder(study, make_worker):
    """A worker whose batch holds every pair of the study."""
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker, study_session=visit(study, worker)))
    return worker, batch


def claims_of(batch):
    return list(ValidationClaim.objects.filter(batch=batch).order_by("id"))


def run_out(batch):
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))


def warning_minutes(batch):
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() + timedelta(minutes=2))


def waiting(study, worker, *, ago=timedelta(minutes=1)):
    """The worker's visit was told "no task" `ago`."""
    session = visit(study, worker)
    StudySession.objects.filter(pk=session.pk).update(no_task_at=timezone.now() - ago)
    return session


def renew(worker, batch):
    return present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS)).outcome


def test_an_expired_batch_is_taken_back_once(holder):
    worker, batch = holder
    run_out(batch)
    assert renew(worker, batch) is HoldRenewal.TAKEN_BACK
    assert {claim.take_backs for claim in claims_of(batch)} == {1}
    run_out(batch)
    assert renew(worker, batch) is HoldRenewal.BACK_AT_LIMIT
    # Refused, it holds nothing: its pairs are back in the queue.
    assert all(claim.status == ClaimStatus.EXPIRED for claim in claims_of(batch))


def test_take_backs_follow_the_setting(holder):
    worker, batch = holder
    with override_settings(NLI={**settings.NLI, "HOLD_TAKE_BACKS": 2}):
        for _ in range(2):
            run_out(batch)
            assert renew(worker, batch) is HoldRenewal.TAKEN_BACK
        run_out(batch)
        assert renew(worker, batch) is HoldRenewal.BACK_AT_LIMIT


def test_no_take_back_when_the_settings_allow_none(holder):
    worker, batch = holder
    run_out(batch)
    with override_settings(NLI={**settings.NLI, "HOLD_TAKE_BACKS": 0}):
        assert renew(worker, batch) is HoldRenewal.BACK_AT_LIMIT


def test_a_take_back_is_refused_while_another_participant_waits(study, holder, make_worker):
    worker, batch = holder
    pairs = {claim.pair_id for claim in claims_of(batch)}
    other = make_worker()
    session = waiting(study, other)
    run_out(batch)
    assert renew(worker, batch) is HoldRenewal.BACK_WAITED_FOR
    assert all(claim.status == ClaimStatus.EXPIRED for claim in claims_of(batch))
    # What they waited for is theirs now.
    theirs = present(batch_claims.claim_validation_batch(other, study_session=session))
    assert {claim.pair_id for claim in claims_of(theirs)} == pairs


def test_more_time_is_refused_while_another_participant_waits(study, holder, make_worker):
    worker, batch = holder
    waiting(study, make_worker())
    warning_minutes(batch)
    assert renew(worker, batch) is HoldRenewal.WAITED_FOR
    assert claims_of(batch)[0].expires_at < timezone.now() + timedelta(minutes=3)


def test_a_take_back_is_allowed_when_nobody_waits(study, holder, make_worker):
    worker, batch = holder
    # A "no task" older than a claim period: that participant is not waiting any more.
    waiting(study, make_worker(), ago=timedelta(minutes=CLAIM_MINUTES + 1))
    run_out(batch)
    assert renew(worker, batch) is HoldRenewal.TAKEN_BACK


def test_a_participant_who_got_work_since_is_not_waiting(study, holder, make_worker):
    worker, batch = holder
    other = make_worker()
    waiting(study, other)
    make_pair(study.dataset, label=Label.NEUTRAL)  # new work came, and they took it
    assert batch_claims.claim_validation_batch(other, study_session=StudySession.objects.get(worker=other))
    warning_minutes(batch)
    assert renew(worker, batch) is HoldRenewal.EXTENDED


def test_waiting_in_another_study_does_not_count(holder, make_worker):
    worker, batch = holder
    elsewhere = Study.objects.create(
        slug="holds-elsewhere",
        name="Another study",
        dataset=make_dataset("holds-elsewhere"),
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code="ELSEWHERE",
    )
    waiting(elsewhere, make_worker())
    run_out(batch)
    assert renew(worker, batch) is HoldRenewal.TAKEN_BACK


# --- the pages ---------------------------------------------------------------------------------


def arrive(client, study, pid):
    return client.get(reverse("study_entry", args=[study.slug]), {**PROLIFIC, "PROLIFIC_PID": pid, "SESSION_ID": pid})


def test_an_arrival_told_no_task_waits_and_the_holder_cannot_take_the_pairs_back(client, study, holder, make_worker):
    worker, batch = holder
    # Another participant works beside the holder (a backup claim, docs/holds.md): the arrival finds nothing.
    backup = make_worker()
    present(batch_claims.claim_validation_batch(backup, study_session=visit(study, backup)))
    arrive(client, study, "5a1b2c3d4e5f6a7b8c9d0e1f")
    page = client.get(reverse("validation:next"))
    assert "No pairs to validate right now" in page.content.decode()
    assert StudySession.objects.exclude(worker__in=[worker, backup]).get().no_task_at is not None

    run_out(batch)
    client.force_login(worker.user)
    response = client.post(reverse("validation:batch-renew", kwargs={"batch": batch}), follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0].endswith("?taken=back_waited_for")
    assert "other participants are waiting for work that only these pairs can give them" in page
    assert "your work is still kept in this browser" in page
    assert 'id="hold-take-back"' not in page
    assert f'data-draft-key="batch-{batch}"' in page  # the page still holds the browser's choices


def test_the_page_says_a_batch_taken_back_once_cannot_come_back_again(client, holder):
    worker, batch = holder
    client.force_login(worker.user)
    renew_url = reverse("validation:batch-renew", kwargs={"batch": batch})
    run_out(batch)
    assert "these pairs again" in client.post(renew_url, follow=True).content.decode()
    run_out(batch)
    # A reload after the end: no button that cannot work, and why.
    page = client.get(reverse("validation:batch", kwargs={"batch": batch})).content.decode()
    assert 'id="hold-take-back"' not in page and "cannot come back again" in page
    page = client.post(renew_url, follow=True).content.decode()
    assert "you took these pairs back once already" in page


def test_more_time_refused_says_why(client, study, holder, make_worker):
    worker, batch = holder
    waiting(study, make_worker())
    warning_minutes(batch)
    client.force_login(worker.user)
    page = client.post(reverse("validation:batch-renew", kwargs={"batch": batch}), follow=True).content.decode()
    assert "Other participants are waiting for work" in page and "please send your work" in page


def in_study(client, worker):
    """The worker's browser, inside their study visit (as its link leaves it)."""
    client.force_login(worker.user)
    session = client.session
    session["study_session_id"] = StudySession.objects.get(worker=worker).pk
    session.save()


def test_a_holder_refused_the_pairs_back_cannot_claim_them_anew_while_another_waits(client, study, holder, make_worker):
    worker, batch = holder
    waiting(study, make_worker())
    run_out(batch)
    assert renew(worker, batch) is HoldRenewal.BACK_WAITED_FOR
    in_study(client, worker)
    page = client.get(reverse("validation:next")).content.decode()
    assert "Please wait your turn" in page and "other participants are waiting for work" in page
    assert not ValidationClaim.objects.filter(worker=worker).exclude(batch=batch).exists()


def test_a_holder_whose_batch_ran_out_claims_again_when_nobody_waits(client, study, holder):
    worker, batch = holder
    make_pair(study.dataset, label=Label.NEUTRAL)  # work the holder was never served
    run_out(batch)
    in_study(client, worker)
    response = client.get(reverse("validation:next"))
    assert response.status_code == 302, response.content.decode()[-1500:]
    assert "/validate/batch/" in response["Location"]
    assert str(batch) not in response["Location"]
