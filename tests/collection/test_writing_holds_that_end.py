"""Writing holds that end: a line whose hold ran out comes back at most
HOLD_TAKE_BACKS times, by any way back (the hold's button, a late send, the next visit to the task),
and neither more time nor a take-back is given while another writer of the study waits for work."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collection import holds, writing_claims
from collection.models import WritingClaim
from corpus.models import Pair
from crowd import holds as crowd_holds
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def study():
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 1)  # the study's last line
    return Study.objects.create(
        slug="writing-holds-end",
        name="Write sentences",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        tasks_per_batch=10,
        completion_code="WRITE-END",
    )


def visit(study, worker):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")


@pytest.fixture
def writer(study, make_worker):
    worker = make_worker()
    return worker, present(writing_claims.claim_next_premise(worker, study_session=visit(study, worker)))


def run_out(claim):
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


def waiting(study, worker):
    session = visit(study, worker)
    StudySession.objects.filter(pk=session.pk).update(no_task_at=timezone.now() - timedelta(minutes=1))
    return session


def test_a_line_is_taken_back_once(writer):
    worker, claim = writer
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.TAKEN_BACK
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.BACK_AT_LIMIT
    claim.refresh_from_db()
    assert (claim.status, claim.take_backs) == (ClaimStatus.EXPIRED, 1)


def test_the_next_visit_does_not_reopen_a_line_taken_back_once(writer):
    worker, claim = writer
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.TAKEN_BACK
    run_out(claim)
    assert writing_claims.reopen_expired_line(worker, study_session=claim.study_session) is None
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.EXPIRED


def test_a_line_is_not_taken_back_while_another_writer_waits(study, writer, make_worker):
    worker, claim = writer
    other = make_worker()
    session = waiting(study, other)
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.BACK_WAITED_FOR
    assert present(writing_claims.claim_next_premise(other, study_session=session)).premise_id == claim.premise_id


def test_more_time_is_refused_while_another_writer_waits(study, writer, make_worker):
    worker, claim = writer
    waiting(study, make_worker())
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() + timedelta(minutes=1))
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.WAITED_FOR


def test_a_line_comes_back_when_nobody_waits(study, writer, make_worker):
    worker, claim = writer
    visit(study, make_worker())  # in the study, never told "no task"
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.TAKEN_BACK


def test_a_late_send_that_cannot_come_back_keeps_the_sentences_and_says_why(client, study, writer, make_worker):
    worker, claim = writer
    waiting(study, make_worker())
    add_premises(study.dataset, claim.premise.genre, 1, start=1)  # another line for the writer to copy them to
    run_out(claim)
    client.force_login(worker.user)
    response = client.post(reverse("writing_resubmit", args=[claim.token]), GOOD, follow=True)
    page = response.content.decode()
    assert "other participants are waiting for work that only that line can give them" in page
    assert 'id="orphan-sentences"' in page and all(text in page for text in GOOD.values())
    assert not Pair.objects.exists()


def test_the_writer_told_no_task_is_recorded_as_waiting(client, study, writer):
    worker, claim = writer
    client.get(
        reverse("study_entry", args=[study.slug]),
        {"PROLIFIC_PID": "6a1b2c3d4e5f6a7b8c9d0e1f", "STUDY_ID": "61aa11bb22cc33dd44ee55ff", "SESSION_ID": "w-1"},
    )
    response = client.get(reverse("writing_next"))
    assert "Every line has been taken" in response.content.decode()
    assert StudySession.objects.exclude(worker=worker).get().no_task_at is not None
    # So the line does not come back to its writer once it runs out.
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.BACK_WAITED_FOR


def test_a_writer_refused_the_line_back_waits_its_turn_for_a_new_one(client, study, writer, make_worker):
    worker, claim = writer
    waiting(study, make_worker())
    add_premises(study.dataset, claim.premise.genre, 1, start=1)
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.BACK_WAITED_FOR
    client.force_login(worker.user)
    session = client.session
    session["study_session_id"] = claim.study_session_id
    session.save()
    page = client.get(reverse("writing_next")).content.decode()
    assert 'id="wait-turn"' in page and "other participants are waiting for work" in page
    assert WritingClaim.objects.filter(worker=worker).count() == 1


def test_a_study_sets_its_own_take_backs_warning_and_more_time(study, writer, settings):
    """The hold's rules are the study's when it sets them (the server's otherwise)."""
    worker, claim = writer
    settings.NLI = {**settings.NLI, "HOLD_TAKE_BACKS": 5, "HOLD_WARNING_MINUTES": 3, "HOLD_EXTENSIONS": 1}
    Study.objects.filter(pk=study.pk).update(hold_take_backs=0, hold_warning_minutes=10, hold_extensions=0)
    claim.refresh_from_db()
    # Ten minutes before its end the page warns (the study's), and no more time is given (0 extensions).
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() + timedelta(minutes=8))
    claim.refresh_from_db()
    view = crowd_holds.hold_view([claim], timezone.now(), minutes=holds.claim_minutes(claim.study_session))
    assert (view.warn_seconds, view.extendable, view.may_take_back) == (600, False, False)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.AT_LIMIT
    run_out(claim)
    assert holds.renew_writing_hold(worker, claim.token) is HoldRenewal.BACK_AT_LIMIT  # never taken back
    # Blank again: the server's rules (five take-backs).
    Study.objects.filter(pk=study.pk).update(hold_take_backs=None, hold_warning_minutes=None, hold_extensions=None)
    assert crowd_holds.take_backs_allowed(Study.objects.get(pk=study.pk)) == 5
    assert crowd_holds.warning_seconds(Study.objects.get(pk=study.pk)) == 180
