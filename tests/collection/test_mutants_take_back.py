"""Taking back a writing line whose hold ran out (`writing_claims.take_back_line`), at the edges
mutmut found unguarded: only the worker's own line, found by its token among their claims; a worker
who holds another line is told busy; the study's own claim minutes set the new hold and the window
in which a waiting participant comes first, and the worker's own wait is not another's; every
take-back is counted, on the claim and as a claim made on the premise's claim-order row."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from collection import writing_claims
from collection.models import WritingClaim
from corpus.models import Dataset, Worker
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus, Study, StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db

SERVER_MINUTES = 30


@pytest.fixture(autouse=True)
def _server_hold_rules(settings):
    settings.NLI = {**settings.NLI, "WRITING_CLAIM_MINUTES": SERVER_MINUTES, "HOLD_TAKE_BACKS": 1}


@pytest.fixture
def dataset() -> Dataset:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    return dataset


def run_out(claim: WritingClaim, ago: timedelta = timedelta(minutes=5)) -> None:
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - ago)


def in_study(make_worker, study: Study, name: str = "own") -> tuple[Worker, StudySession, WritingClaim]:
    worker = make_worker()
    session = StudySession.objects.create(study=study, worker=worker, external_session_id=name)
    return worker, session, present(writing_claims.claim_next_premise(worker, study_session=session))


def claims_made(premise_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT claims_made FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s", [premise_id])
        (made,) = present(cursor.fetchone())
    return int(made)


def test_a_take_back_of_another_workers_token_is_refused(make_worker, dataset):
    claim = present(writing_claims.claim_next_premise(make_worker(), dataset=dataset))
    run_out(claim)
    with pytest.raises(WritingClaim.DoesNotExist):
        writing_claims.take_back_line(make_worker(), claim.token)
    claim.refresh_from_db()
    assert claim.expires_at < timezone.now() and claim.take_backs == 0


def test_a_take_back_finds_the_line_by_its_token_among_the_workers_claims(make_worker, dataset):
    worker = make_worker()
    written = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    WritingClaim.objects.filter(pk=written.pk).update(status=ClaimStatus.SUBMITTED)
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    assert claim.pk != written.pk
    run_out(claim)
    back, outcome = writing_claims.take_back_line(worker, claim.token)
    assert outcome is HoldRenewal.TAKEN_BACK and present(back).pk == claim.pk
    with pytest.raises(writing_claims.ClaimAlreadySubmitted):
        writing_claims.take_back_line(worker, written.token)


def test_a_worker_holding_another_live_claim_is_told_busy(make_worker, dataset):
    worker = make_worker()
    expired = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    WritingClaim.objects.filter(pk=expired.pk).update(
        status=ClaimStatus.EXPIRED, expires_at=timezone.now() - timedelta(minutes=5)
    )
    held = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    assert held.premise_id != expired.premise_id
    assert writing_claims.take_back_line(worker, expired.token) == (None, HoldRenewal.BUSY)
    expired.refresh_from_db()
    assert expired.status == ClaimStatus.EXPIRED and expired.take_backs == 0


def test_take_backs_counts_every_take_back(make_worker, dataset):
    worker, _, claim = in_study(make_worker, make_study(dataset, hold_take_backs=2))
    for taken in (1, 2):
        run_out(claim)
        assert writing_claims.take_back_line(worker, claim.token)[1] is HoldRenewal.TAKEN_BACK
        claim.refresh_from_db()
        assert claim.take_backs == taken
    run_out(claim)
    assert writing_claims.take_back_line(worker, claim.token) == (None, HoldRenewal.BACK_AT_LIMIT)


def test_a_take_back_holds_the_line_for_the_studys_own_claim_minutes(make_worker, dataset):
    worker, _, claim = in_study(make_worker, make_study(dataset, claim_minutes=5))
    run_out(claim)
    back = present(writing_claims.renew_expired_claim(worker, claim.token))
    left = back.expires_at - timezone.now()
    assert timedelta(minutes=4) < left <= timedelta(minutes=5)
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN and claim.expires_at == back.expires_at


def test_a_participant_waiting_within_the_studys_own_claim_minutes_comes_first(make_worker, dataset):
    study = make_study(dataset, claim_minutes=60)
    worker, _, claim = in_study(make_worker, study)
    # Told "no task" 45 minutes ago: within the study's hour, though past the server's half hour.
    StudySession.objects.create(
        study=study,
        worker=make_worker(),
        external_session_id="waiting",
        no_task_at=timezone.now() - timedelta(minutes=45),
    )
    run_out(claim)
    assert writing_claims.take_back_line(worker, claim.token) == (None, HoldRenewal.BACK_WAITED_FOR)
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.EXPIRED and claim.take_backs == 0


def test_the_workers_own_wait_for_work_does_not_keep_their_line_from_them(make_worker, dataset):
    worker, session, claim = in_study(make_worker, make_study(dataset))
    StudySession.objects.filter(pk=session.pk).update(no_task_at=timezone.now() - timedelta(minutes=1))
    run_out(claim)
    back, outcome = writing_claims.take_back_line(worker, claim.token)
    assert outcome is HoldRenewal.TAKEN_BACK and present(back).pk == claim.pk


def test_the_claims_made_counted_on_the_premises_claim_order_row(make_worker, dataset):
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    assert claims_made(claim.premise_id) == 1
    run_out(claim)
    assert writing_claims.take_back_line(worker, claim.token)[1] is HoldRenewal.TAKEN_BACK
    assert claims_made(claim.premise_id) == 2
