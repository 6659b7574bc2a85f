"""What the writing claim's statements must keep, each found unguarded by a library mutant: the
study's own claim minutes, the served count's shards, a submit's locks leaving the dataset row free
for the dataset's other writers, and a candidate statement that keeps to its pool (genres, files,
with a dataset or without), leaves out premises whose places live claims hold and those already
tried, and finds nothing for a worker the dataset's team excluded; a claim whose every candidate is
locked waits for one instead of saying there is no task."""

import threading
from datetime import timedelta

import psycopg2
import pytest
from django.db import OperationalError, connection, connections, transaction
from django.utils import timezone

from collection import writing_claims
from collection.models import StudyServed
from corpus.models import Dataset, Genre, Premise, WorkerExclusion
from crowd.models import StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present


@pytest.mark.django_db
def test_a_studys_writing_claim_runs_out_after_the_studys_own_claim_minutes(make_worker):
    dataset, genre = writing_setup("own-minutes")
    add_premises(dataset, genre, 1)
    study = make_study(dataset, slug="own-minutes", task_kind=TaskKind.WRITING, claim_minutes=7)
    worker = make_worker()
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="own-minutes")
    before = timezone.now()
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    after = timezone.now()
    assert before + timedelta(minutes=7) <= claim.expires_at <= after + timedelta(minutes=7)


@pytest.mark.django_db
def test_a_studys_served_count_stays_on_its_shards_one_per_claimers_worker_id(make_worker):
    dataset, genre = writing_setup("served-shards")
    add_premises(dataset, genre, 30)
    study = make_study(dataset, slug="served-shards", task_kind=TaskKind.WRITING)
    workers = [make_worker() for _ in range(3 * StudyServed.SHARDS)]
    for worker in workers:
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{worker.pk}")
        present(writing_claims.claim_next_premise(worker, study_session=session))
    rows = {row.shard: row.claims for row in StudyServed.objects.filter(study=study)}
    expected: dict[int, int] = {}
    for worker in workers:
        expected[worker.pk % StudyServed.SHARDS] = expected.get(worker.pk % StudyServed.SHARDS, 0) + 1
    assert rows == expected
    assert set(rows) == set(range(StudyServed.SHARDS))


@pytest.mark.django_db(transaction=True)
def test_a_submits_locks_leave_the_dataset_row_to_the_datasets_other_writers():
    """Two submits on two premises of one dataset: the first holds its locks, the second takes its
    own at once. Locking the dataset row with the premise would queue every writer of the dataset."""
    dataset, genre = writing_setup("dataset-free")
    first, second = add_premises(dataset, genre, 2)
    holding, release, errors = threading.Event(), threading.Event(), []

    def first_submit() -> None:
        try:
            with transaction.atomic():
                writing_claims.lock_written_premise(first.pk)
                holding.set()
                release.wait(20)
        except BaseException as error:  # reported by the assertion after the join
            errors.append(error)
            holding.set()
        finally:
            connections.close_all()

    submitter = threading.Thread(target=first_submit)
    submitter.start()
    try:
        assert holding.wait(20)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            locked = writing_claims.lock_written_premise(second.pk)
            with connection.cursor() as cursor:  # what a pair's insert takes on its dataset
                cursor.execute("SELECT 1 FROM collection_dataset WHERE id = %s FOR KEY SHARE", [dataset.pk])
    except OperationalError as error:
        raise AssertionError(f"the second submit waited on the first: {error}") from error
    finally:
        release.set()
        submitter.join(timeout=30)
    assert not errors, errors
    assert locked.pk == second.pk and locked.dataset.slug == "dataset-free"


@pytest.mark.django_db
def test_a_claim_without_a_dataset_keeps_to_a_pools_import_files(make_worker):
    dataset, genre = writing_setup("no-dataset-pool")
    Dataset.objects.filter(pk=dataset.pk).update(is_imported=False)
    add_premises(dataset, genre, 2, source="first.jsonl")
    (wanted,) = add_premises(dataset, genre, 1, start=100, source="second.jsonl")
    sql, params = writing_claims.candidate_statement(
        make_worker(), timezone.now(), dataset=None, pool=([], ["second.jsonl"]), wanted=5
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        assert [pk for (pk,) in cursor.fetchall()] == [wanted.pk]


def candidates(worker, **statement) -> list[int]:
    sql, params = writing_claims.candidate_statement(worker, timezone.now(), wanted=50, **statement)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return sorted(pk for (pk,) in cursor.fetchall())


def three_genres(slug: str) -> tuple[Dataset, list[list[Premise]]]:
    dataset, first = writing_setup(slug)
    Dataset.objects.filter(pk=dataset.pk).update(is_imported=False)
    dataset.refresh_from_db()
    others = [
        Genre.objects.create(slug=f"{slug}-{n}", name=f"Genre {n}", is_training=True, family=first.family)
        for n in (2, 3)
    ]
    return dataset, [add_premises(dataset, genre, 2, start=100 * n) for n, genre in enumerate([first, *others])]


@pytest.mark.django_db
@pytest.mark.parametrize("with_dataset", [True, False], ids=["one dataset", "every dataset"])
def test_a_candidate_statement_keeps_to_its_pools_genres_one_or_several(make_worker, with_dataset):
    dataset, (first, second, third) = three_genres(f"pool-genres-{with_dataset}")
    of = dataset if with_dataset else None
    worker = make_worker()
    assert candidates(worker, dataset=of, pool=([first[0].genre_id, third[0].genre_id], [])) == sorted(
        premise.pk for premise in [*first, *third]
    )
    assert candidates(worker, dataset=of, pool=([second[0].genre_id], [])) == [premise.pk for premise in second]


@pytest.mark.django_db
def test_a_candidate_statement_leaves_out_premises_whose_places_live_claims_hold(make_worker):
    dataset, genre = writing_setup("places-held", writings_per_premise=1)
    held, free = add_premises(dataset, genre, 2)
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise_id == held.pk
    assert candidates(make_worker(), dataset=dataset) == [free.pk]


@pytest.mark.django_db
def test_a_candidate_statement_finds_nothing_for_a_worker_the_datasets_team_excluded(make_worker):
    dataset, genre = writing_setup("excluded-candidates")
    add_premises(dataset, genre, 2)
    worker = make_worker()
    assert len(candidates(worker, dataset=dataset)) == 2
    WorkerExclusion.objects.create(worker=worker, team_id=dataset.team_id)
    assert candidates(worker, dataset=dataset) == []
    assert len(candidates(make_worker(), dataset=dataset)) == 2


@pytest.mark.django_db
def test_a_candidate_statement_leaves_out_the_premises_the_claim_already_tried(make_worker):
    dataset, genre = writing_setup("tried-candidates")
    first, second, third = add_premises(dataset, genre, 3)
    worker = make_worker()
    assert candidates(worker, dataset=dataset, tried=[first.pk, third.pk]) == [second.pk]


@pytest.mark.django_db(transaction=True)
def test_a_claim_whose_only_premise_is_locked_by_a_claim_in_flight_waits_for_it_and_takes_it(make_worker):
    """Two places on the one premise; another claimer holds its order row. The first look skips it;
    the second waits for the lock and finds the place still free."""
    dataset, genre = writing_setup("waits-for-locked", writings_per_premise=2)
    (premise,) = add_premises(dataset, genre, 1)
    worker = make_worker()
    in_flight = psycopg2.connect(**connection.get_connection_params())  # released from a timer's thread
    with in_flight.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s FOR NO KEY UPDATE", [premise.pk]
        )
    releaser = threading.Timer(0.5, in_flight.rollback)
    releaser.start()
    try:
        claim = writing_claims.claim_next_premise(worker, dataset=dataset)
    finally:
        releaser.join()
        in_flight.close()
    assert present(claim).premise_id == premise.pk
