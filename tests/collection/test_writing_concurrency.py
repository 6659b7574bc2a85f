"""Many workers asking for the next writing task, or submitting, at the same moment (PostgreSQL).

Each thread has its own database connection (Django's connections are per thread), so these are
real concurrent transactions racing on row locks, not calls taking turns.
"""

from functools import partial

import pytest
from django.contrib.auth import get_user_model

from collection import services, writing_claims
from collection.models import WritingClaim
from corpus.models import Premise, Worker
from crowd.models import ClaimStatus, StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.concurrency import at_once
from tests.present import present

pytestmark = [pytest.mark.django_db(transaction=True)]

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}
ROUNDS = 20


def new_workers(count, prefix):
    workers = []
    for i in range(count):
        user = get_user_model()(username=f"{prefix}-{i}")
        user.set_unusable_password()
        user.save()
        workers.append(Worker.objects.create(user=user))
    return workers


def claims_at_once(workers, dataset):
    results = at_once([lambda w=w: writing_claims.claim_next_premise(w, dataset=dataset) for w in workers])
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


@pytest.mark.parametrize("workers_per_round", [2, 6])
def test_workers_asking_together_never_get_the_same_premise(workers_per_round):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, ROUNDS * workers_per_round)
    for round_no in range(ROUNDS):
        claims = claims_at_once(new_workers(workers_per_round, f"r{round_no}"), dataset)
        assert all(claim is not None for claim in claims), "premises were left, yet a worker got none"
        premise_ids = [claim.premise_id for claim in claims]
        assert len(set(premise_ids)) == len(premise_ids), f"round {round_no}: {premise_ids}"
    assert WritingClaim.objects.count() == ROUNDS * workers_per_round
    assert WritingClaim.objects.values("premise").distinct().count() == ROUNDS * workers_per_round


def test_with_one_premise_left_exactly_one_of_two_workers_gets_it():
    dataset, genre = writing_setup()
    for round_no in range(ROUNDS):
        (premise,) = add_premises(dataset, genre, 1, start=round_no)
        claims = claims_at_once(new_workers(2, f"r{round_no}"), dataset)
        winners = [claim for claim in claims if claim is not None]
        assert len(winners) == 1, f"round {round_no}: {claims}"
        assert winners[0].premise_id == premise.pk
    assert WritingClaim.objects.count() == ROUNDS


# Premises outside the study's pool that each claim passes before it reaches the pool's premise: the
# claims that lose the race read their snapshots before the winner commits and reach the premise
# after it, so a room counted in that snapshot alone would be out of date.
WALKED_PAST = 20000


@pytest.mark.parametrize("writings_per_premise", [1, 2])
def test_a_claim_committed_while_others_walk_to_its_premise_is_counted_by_them(writings_per_premise):
    """The claims that reach the premise after a winner committed, their snapshots older than its
    commit, do not take a place the winner filled: the premise is served exactly as often as wanted."""
    dataset, genre = writing_setup(writings_per_premise=writings_per_premise)
    Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, prompt_id=f"w{i}", split="train", text=f"Walked past {i}.", source="a")
        for i in range(WALKED_PAST)
    )
    study = make_study(dataset, pool_sources=["pool"])
    for round_no in range(ROUNDS // 2):
        (premise,) = add_premises(dataset, genre, 1, start=round_no, source="pool")
        sessions = [
            StudySession.objects.create(study=study, worker=worker, external_session_id=f"{worker.pk}")
            for worker in new_workers(4, f"r{round_no}")
        ]
        results = at_once([partial(writing_claims.claim_next_premise, s.worker, study_session=s) for s in sessions])
        assert [r for r in results if isinstance(r, BaseException)] == []
        winners = [claim for claim in results if claim is not None]
        assert len(winners) == writings_per_premise, f"round {round_no}: {results}"
        assert {claim.premise_id for claim in winners} == {premise.pk}
    assert not WritingClaim.objects.exclude(premise__source="pool").exists()


def test_a_premise_wanted_twice_goes_to_both_workers_even_when_they_ask_together():
    dataset, genre = writing_setup(writings_per_premise=2)
    for round_no in range(ROUNDS // 2):
        (premise,) = add_premises(dataset, genre, 1, start=round_no)
        claims = claims_at_once(new_workers(3, f"r{round_no}"), dataset)
        winners = [claim for claim in claims if claim is not None]
        assert len(winners) == 2, f"round {round_no}: {claims}"
        assert {claim.premise_id for claim in winners} == {premise.pk}


def test_one_worker_asking_twice_at_once_gets_one_claim():
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 10)
    for round_no in range(ROUNDS // 2):
        (worker,) = new_workers(1, f"r{round_no}")
        claims = claims_at_once([worker, worker], dataset)
        assert claims[0].pk == claims[1].pk
        assert WritingClaim.objects.filter(worker=worker, status=ClaimStatus.OPEN).count() == 1


def test_the_same_token_submitted_twice_at_once_saves_one_set_of_pairs():
    dataset, genre = writing_setup()
    add_premises(dataset, genre, ROUNDS)
    for round_no in range(ROUNDS // 2):
        (worker,) = new_workers(1, f"r{round_no}")
        claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
        results = at_once([partial(services.submit_hypotheses, worker, claim.token, **GOOD)] * 2)
        saved = [r for r in results if isinstance(r, services.WritingSubmission)]
        refused = [r for r in results if isinstance(r, writing_claims.ClaimAlreadySubmitted)]
        assert (len(saved), len(refused)) == (1, 1), results
        assert claim.pairs.count() == 3
        assert Premise.objects.get(pk=claim.premise_id).writings_done == 1
