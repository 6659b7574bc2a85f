"""Backup claims: hoarders with spare ids kept a study's tail held for 8.8 claim
periods, a refused take-back coming back as a fresh claim by another id. An arrival who finds every
open pair held is served pairs whose claims no longer hold their place against arrivals (older than
one claim period, or by an id that let a claim of the study run out); the first sends count and a
pair never takes a sixth label."""

from datetime import timedelta

import pytest
from django.utils import timezone

from corpus.models import LABELS_PER_PAIR, Label, Pair, ValidationLabel
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests.present import present
from validation import batch_claims, holds, services
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db

CLAIM_PERIOD = timedelta(minutes=20)


@pytest.fixture
def study():
    dataset = make_dataset("backup-claims")
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL)
    Pair.objects.update(label_count=LABELS_PER_PAIR - 1)  # one place left on each: the study's tail
    return Study.objects.create(
        slug="backup-claims",
        name="Validate sentence pairs",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code="BACKUP",
        catch_trial_share=0,
    )


def visit(study, worker):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")


def claim(study, worker):
    return batch_claims.claim_validation_batch(worker, study_session=visit(study, worker))


def pairs_of(batch):
    return set(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True))


def older(batch, by):
    """The batch was claimed `by` earlier (its hold moved along with it: still live)."""
    claims = ValidationClaim.objects.filter(batch=batch)
    for row in claims:
        ValidationClaim.objects.filter(pk=row.pk).update(created_at=row.created_at - by)


def answers(batch):
    return dict.fromkeys(pairs_of(batch), "neutral")


@pytest.fixture
def holder(study, make_worker):
    worker = make_worker()
    return worker, present(claim(study, worker))


def test_an_arrival_works_beside_a_fresh_claim_and_one_more_finds_no_task(study, holder, make_worker):
    """Every open pair held by one fresh claim: the first arrival takes them as backups
    (BACKUP_PLACES), the next is told there is no task (in flight: the place and one backup)."""
    _, batch = holder
    assert len(pairs_of(batch)) == 5
    backup = present(claim(study, make_worker()))
    assert pairs_of(backup) == pairs_of(batch)
    assert claim(study, make_worker()) is None


def test_a_claim_older_than_a_claim_period_no_longer_holds_its_place(study, holder, make_worker):
    """Kept past its period (More time), the claim closes nothing: two arrivals find work (a place
    and a backup place), the third none."""
    _, batch = holder
    older(batch, CLAIM_PERIOD + timedelta(minutes=1))
    for _ in range(2):
        assert pairs_of(present(claim(study, make_worker()))) == pairs_of(batch)
    assert claim(study, make_worker()) is None


def test_the_claims_of_an_id_that_let_a_claim_run_out_are_served_again(study, holder, make_worker):
    """A take-back after a hold ran out: the id's claims (even fresh ones) do not close their pairs."""
    worker, batch = holder
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert present(holds.renew_batch(worker, batch, batch_claims.VALIDATION_CLAIMS)).outcome is HoldRenewal.TAKEN_BACK
    backup = present(claim(study, make_worker()))
    assert pairs_of(backup) == pairs_of(batch)


def test_the_first_send_counts_and_a_pair_never_takes_a_sixth_label(study, holder, make_worker):
    worker, batch = holder
    older(batch, CLAIM_PERIOD + timedelta(minutes=1))
    arrival = make_worker()
    backup = present(claim(study, arrival))
    # The arrival sends first: each pair gets its fifth label.
    services.submit_validation_batch(arrival, backup, answers(backup))
    assert set(Pair.objects.values_list("label_count", flat=True)) == {LABELS_PER_PAIR}
    # The holder's late send is taken (the batch counts as done) and stores nothing.
    late = services.submit_validation_batch(worker, batch, answers(batch))
    assert late.labels == []
    assert not ValidationLabel.objects.filter(worker=worker).exists()
    assert set(ValidationClaim.objects.filter(batch=batch).values_list("status", flat=True)) == {ClaimStatus.SUBMITTED}
    assert set(Pair.objects.values_list("label_count", flat=True)) == {LABELS_PER_PAIR}


def test_a_late_send_keeps_its_labels_on_pairs_that_still_need_them(study, holder, make_worker):
    worker, batch = holder
    older(batch, CLAIM_PERIOD + timedelta(minutes=1))
    arrival = make_worker()
    backup = present(claim(study, arrival))
    first = min(pairs_of(backup))
    # The arrival's batch is sent with only one pair filled first by another way: its own send.
    Pair.objects.filter(pk__in=pairs_of(backup) - {first}).update(label_count=LABELS_PER_PAIR - 2)
    services.submit_validation_batch(arrival, backup, answers(backup))
    late = services.submit_validation_batch(worker, batch, answers(batch))
    assert {label.pair_id for label in late.labels} == pairs_of(batch) - {first}
    assert Pair.objects.get(pk=first).label_count == LABELS_PER_PAIR


def test_a_backup_batch_counts_in_what_the_study_was_served(study, make_worker):
    """A claim in a study with catch trials reads the batches its sessions were served
    (`selectors.study_served`), and a backup batch is one of them, as the claims count it (a CI run
    found backups missed when only the ordinary door counted)."""
    from django.db.models import Count

    from validation.selectors import study_served

    Study.objects.filter(pk=study.pk).update(catch_trial_share=0.2)
    study.refresh_from_db()
    worker = make_worker()
    batch = present(claim(study, worker))
    backup = present(claim(study, make_worker()))
    assert pairs_of(backup) == pairs_of(batch)
    counted = ValidationClaim.objects.filter(study_session__study=study).aggregate(
        batches=Count("batch", distinct=True)
    )
    assert study_served(study.pk) == (counted["batches"], 0) == (2, 0)
