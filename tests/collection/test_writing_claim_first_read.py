"""A writing claim is one statement (`collection.writing_claims._claim_statement`): the exclusion, the
worker's open claim, the study's pool and the claim made, and the exclusion again in the candidate lock."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from collection import writing_claims
from collection.models import WritingClaim
from corpus.models import Genre, WorkerExclusion
from crowd.models import ClaimStatus, ServingOrder, StudySession

from .writing_helpers import add_premises, make_study, writing_setup

pytestmark = pytest.mark.django_db


def statements(call):
    with CaptureQueriesContext(connection) as queries:
        found = call()
    return found, [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


def test_a_reload_gets_the_open_claim_back_in_one_statement(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    worker = make_worker()
    claim = writing_claims.claim_next_premise(worker, dataset=dataset)
    again, sql = statements(lambda: writing_claims.claim_next_premise(worker, dataset=dataset))
    assert claim is not None and again is not None
    assert again == claim and again.premise_id == claim.premise_id and again.token == claim.token
    assert len(sql) == 1, sql


def test_a_balanced_study_claim_reads_its_pool_and_claims_in_one_statement(make_worker):
    dataset, genre = writing_setup()
    travel = Genre.objects.create(slug="test-travel", name="Test travel", is_training=True, family=genre.family)
    add_premises(dataset, genre, 3)
    add_premises(dataset, travel, 3, start=3)
    study = make_study(dataset, serving_order=ServingOrder.BALANCED)
    study.pool_genres.set([genre, travel])
    worker = make_worker()
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s1")
    claim, sql = statements(lambda: writing_claims.claim_next_premise(worker, study_session=session))
    assert len(sql) == 1, sql
    assert claim is not None and claim.premise.genre_id in (genre.pk, travel.pk)
    assert claim.study_session is session  # the caller's own, with its study: no read to find it


def test_an_expired_open_claim_is_marked_expired_and_a_new_line_is_held(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    worker = make_worker()
    first = writing_claims.claim_next_premise(worker, dataset=dataset)
    assert first is not None
    WritingClaim.objects.filter(pk=first.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    second = writing_claims.claim_next_premise(worker, dataset=dataset)
    assert second is not None and second.pk != first.pk and second.premise_id != first.premise_id
    assert WritingClaim.objects.get(pk=first.pk).status == ClaimStatus.EXPIRED


def test_an_excluded_worker_gets_no_premise_not_even_their_open_claim(make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    worker = make_worker()
    writing_claims.claim_next_premise(worker, dataset=dataset)
    WorkerExclusion.objects.create(worker=worker, team_id=dataset.team_id)
    with pytest.raises(writing_claims.NotAllowedToWrite):
        writing_claims.claim_next_premise(worker, dataset=dataset)


@pytest.mark.parametrize("with_dataset", [True, False])
def test_the_candidate_lock_leaves_out_a_worker_excluded_after_the_first_read(make_worker, with_dataset):
    """An exclusion committed between the first read and the lock still holds: the lock finds nothing."""
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    worker = make_worker()
    WorkerExclusion.objects.create(worker=worker, team_id=dataset.team_id)
    sql, params = writing_claims.candidate_statement(
        worker, timezone.now(), dataset=dataset if with_dataset else None, wanted=3
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        assert cursor.fetchall() == []
    other = make_worker()
    sql, params = writing_claims.candidate_statement(
        other, timezone.now(), dataset=dataset if with_dataset else None, wanted=3
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        assert len(cursor.fetchall()) == 3
