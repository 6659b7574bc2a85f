"""A balanced study's writing claim orders its genres by a maintained count of the claims made in
each (`collection.models.StudyServed`), not by counting the study's claims on every claim, a read
that grew with the crowd. The count is kept by the claim's own statement, so it
matches the claims made, also when a crowd claims and submits at once."""

from collections import Counter
from functools import partial

import pytest
from django.db import connection
from django.db.models import Sum
from django.test.utils import CaptureQueriesContext

from collection import services, writing_claims
from collection.models import StudyServed, WritingClaim
from corpus.models import Genre, Premise
from crowd.models import ServingOrder, StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.concurrency import at_once
from tests.present import present

SENTENCES = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}
WRITERS = 8
ROUNDS = 3


def balanced_two_genre_study(slug, per_genre):
    dataset, fiction = writing_setup(slug, writings_per_premise=1)
    travel = Genre.objects.create(slug=f"{slug}-travel", name="Travel", is_training=True, family=fiction.family)
    add_premises(dataset, fiction, per_genre)
    add_premises(dataset, travel, per_genre, start=10_000)
    study = make_study(
        dataset, slug=slug, task_kind=TaskKind.WRITING, serving_order=ServingOrder.BALANCED, tasks_per_batch=ROUNDS
    )
    study.pool_genres.set([fiction, travel])
    return dataset, study, (fiction, travel)


def served_per_genre(study):
    rows = StudyServed.objects.filter(study=study).values_list("genre_id").annotate(n=Sum("claims"))
    return {genre: n for genre, n in rows if n}


def claims_per_genre(study):
    claims = WritingClaim.objects.filter(study_session__study=study)
    return dict(Counter(claims.values_list("premise__genre_id", flat=True)))


@pytest.mark.django_db
def test_the_balanced_order_is_read_from_the_served_counts_not_from_the_studys_claims(make_worker):
    _, study, (fiction, travel) = balanced_two_genre_study("served-read", per_genre=6)
    # Counts that no claim made: fiction looks served three times, so the next three go to travel.
    StudyServed.objects.create(study=study, genre=fiction, source="", shard=0, claims=3)
    served = []
    for n in range(3):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{n}")
        served.append(present(writing_claims.claim_next_premise(worker, study_session=session)).premise.genre_id)
    assert served == [travel.pk] * 3
    assert served_per_genre(study) == {fiction.pk: 3, travel.pk: 3}


@pytest.mark.django_db
def test_each_claim_is_counted_once_in_its_genre_and_the_genres_stay_balanced(make_worker):
    _, study, (fiction, travel) = balanced_two_genre_study("served-count", per_genre=6)
    for n in range(8):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{n}")
        present(writing_claims.claim_next_premise(worker, study_session=session))
    assert served_per_genre(study) == claims_per_genre(study) == {fiction.pk: 4, travel.pk: 4}


def write_a_batch(worker, session):
    """A participant's visit: claim a line and write it, ROUNDS times."""
    for _ in range(ROUNDS):
        claim = present(writing_claims.claim_next_premise(worker, study_session=session))
        services.submit_hypotheses(worker, claim.token, **SENTENCES)


@pytest.mark.django_db(transaction=True)
def test_a_crowd_claiming_and_submitting_in_one_study_at_once_never_deadlocks_and_counts_every_claim(make_worker):
    # Fewer lines than the writers might spread over: claims and submits of one study contend for
    # the same premises, served counts and sessions.
    _, study, _ = balanced_two_genre_study("served-crowd", per_genre=WRITERS * ROUNDS)
    writers = [make_worker() for _ in range(WRITERS)]
    sessions = [
        StudySession.objects.create(study=study, worker=worker, external_session_id=f"c{worker.pk}")
        for worker in writers
    ]
    results = at_once(
        [partial(write_a_batch, worker, session) for worker, session in zip(writers, sessions, strict=True)]
    )
    assert [result for result in results if isinstance(result, Exception)] == []
    made = claims_per_genre(study)
    assert sum(made.values()) == WRITERS * ROUNDS
    assert served_per_genre(study) == made
    # Each line written once, each session's batch complete.
    assert not Premise.objects.filter(writings_done__gt=1).exists()
    assert Premise.objects.filter(writings_done=1).count() == WRITERS * ROUNDS
    assert all(session.tasks_done == ROUNDS for session in StudySession.objects.filter(study=study))


@pytest.mark.django_db
def test_a_genre_with_nothing_left_costs_a_claim_no_statement_of_its_own(make_worker):
    _, study, (fiction, travel) = balanced_two_genre_study("served-dry", per_genre=8)
    Premise.objects.filter(genre=fiction).update(writings_done=1)  # written out, and never served
    for n in range(5):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"d{n}")
        with CaptureQueriesContext(connection) as statements:
            claim = present(writing_claims.claim_next_premise(worker, study_session=session))
        assert claim.premise.genre == travel
        assert len([q for q in statements.captured_queries if "SAVEPOINT" not in q["sql"]]) == 1
