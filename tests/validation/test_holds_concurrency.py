"""Taking an expired batch back while others claim (PostgreSQL: real row locks, many connections):
a pair with one place left is never held twice, whoever wins it."""

from collections.abc import Callable
from datetime import timedelta
from functools import partial

from django.db.models import Count
from django.utils import timezone

from corpus.models import Label, Pair
from crowd.holds import HoldRenewal
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests.concurrency import at_once
from tests.present import present
from validation import batch_claims, holds
from validation.models import ValidationClaim

from .validation_factories import make_dataset, make_pair

CLAIMERS = 4
ROUNDS = 6


def test_a_batch_taken_back_while_others_claim_never_holds_a_pair_twice(transactional_db, make_worker):
    dataset = make_dataset("holds-race")
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL)
    Pair.objects.update(label_count=4)  # one place left on each pair
    owner = make_worker()
    claimers = [make_worker() for _ in range(CLAIMERS)]
    batch = present(batch_claims.claim_validation_batch(owner))
    outcomes = []
    for _ in range(ROUNDS):
        ValidationClaim.objects.exclude(worker=owner).delete()
        ValidationClaim.objects.filter(worker=owner).update(
            status=ClaimStatus.EXPIRED, expires_at=timezone.now() - timedelta(minutes=1), take_backs=0
        )
        Pair.objects.update(held_places=0)
        calls: list[Callable[[], object]] = [lambda: holds.renew_batch(owner, batch, batch_claims.VALIDATION_CLAIMS)]
        calls += [partial(batch_claims.claim_validation_batch, worker) for worker in claimers]
        results = at_once(calls, timeout=60)
        assert not [result for result in results if isinstance(result, Exception)]
        live = ValidationClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__gt=timezone.now())
        per_pair = live.values("pair").annotate(n=Count("id")).values_list("n", flat=True)
        assert all(n == 1 for n in per_pair)
        outcome = results[0].outcome
        outcomes.append(outcome)
        if outcome is HoldRenewal.TAKEN_BACK:
            assert set(live.values_list("worker", flat=True)) == {owner.pk}
            assert live.count() == 5
        else:
            assert outcome is HoldRenewal.TAKEN
            assert not live.filter(worker=owner).exists()


def test_a_waiting_participant_gets_the_pairs_whoever_commits_first(transactional_db, make_worker):
    """The holder asks for their expired batch back at the moment the participant told "no task"
    claims again: whichever commits first, the waiter gets every pair and the holder none."""
    dataset = make_dataset("holds-waiter-race")
    for _ in range(5):
        make_pair(dataset, label=Label.NEUTRAL)
    Pair.objects.update(label_count=4)  # one place left on each pair: the study's tail
    study = Study.objects.create(
        slug="holds-waiter-race",
        name="Race",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=10,
        completion_code="RACE",
        catch_trial_share=0,
    )
    owner, waiter = make_worker(), make_worker()
    sessions = {
        worker.pk: StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")
        for worker in (owner, waiter)
    }
    batch = present(batch_claims.claim_validation_batch(owner, study_session=sessions[owner.pk]))

    for _ in range(ROUNDS):
        ValidationClaim.objects.filter(worker=waiter).delete()
        ValidationClaim.objects.filter(worker=owner).update(
            status=ClaimStatus.EXPIRED, expires_at=timezone.now() - timedelta(minutes=1), take_backs=0
        )
        Pair.objects.update(held_places=0)
        StudySession.objects.filter(pk=sessions[waiter.pk].pk).update(no_task_at=timezone.now())
        results = at_once(
            [
                lambda: holds.renew_batch(owner, batch, batch_claims.VALIDATION_CLAIMS),
                lambda: batch_claims.claim_validation_batch(waiter, study_session=sessions[waiter.pk]),
            ]
        )
        assert not [result for result in results if isinstance(result, Exception)]
        outcome = results[0].outcome
        assert outcome in (HoldRenewal.BACK_WAITED_FOR, HoldRenewal.TAKEN)

        live = ValidationClaim.objects.filter(status=ClaimStatus.OPEN, expires_at__gt=timezone.now())
        assert not live.filter(worker=owner).exists()
        assert live.filter(worker=waiter).count() == 5
