"""A balanced study's writing claim asks each genre of its pool in turn; a genre with nothing left
is answered by an empty index range, not a walk of the dataset's premises.

The plans are read with EXPLAIN ANALYZE on a dataset whose written-out genre and whose genre with
work both hold thousands of premises: the candidate statement for the written-out genre reads no
premise at all, and the one for the other genre reads the one premise it locks."""

import pytest
from django.db import connection
from django.utils import timezone

from collection import writing_claims
from corpus.models import Genre, Premise
from crowd.models import ServingOrder, Study, StudySession, TaskKind
from tests.collection.writing_helpers import writing_setup
from tests.plans import analysed_plan, nodes_reading

pytestmark = pytest.mark.django_db

PER_GENRE = 3000


def two_genres_one_written_out():
    """A dataset of PER_GENRE premises in each of two genres: the first genre's all written (its
    premises still `available`, as written premises stay), half of the second's."""
    dataset, written_out = writing_setup("genre-nothing-left", writings_per_premise=1)
    with_work = Genre.objects.create(slug="with-work", name="With work", is_training=True, family=written_out.family)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO collection_premise (dataset_id, genre_id, prompt_id, text, text_hash, parse, binary_parse,"
            " split, status, writings_done, source, created_at)"
            " SELECT %s, CASE WHEN n %% 2 = 0 THEN %s ELSE %s END, 'p' || n, 'Premise ' || n || '.', md5(n::text),"
            " '', '', 'train', 'available', CASE WHEN n %% 2 = 0 OR n %% 4 = 1 THEN 1 ELSE 0 END, '', now()"
            " FROM generate_series(1, %s) n",
            [dataset.pk, written_out.pk, with_work.pk, 2 * PER_GENRE],
        )
        cursor.execute(f"ANALYZE collection_premise, {writing_claims.ORDER_TABLE}")
    return dataset, written_out, with_work


def candidate_plan(worker, dataset, genre):
    sql, params = writing_claims.candidate_statement(worker, timezone.now(), dataset=dataset, pool=([genre.pk], []))
    with connection.cursor() as cursor:
        # The walk is what is measured: a table this small might otherwise be read whole and sorted.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        plan = analysed_plan(cursor, sql, params)
    scans = list(nodes_reading(plan, writing_claims.ORDER_TABLE))
    assert scans, plan
    return scans


def rows_read(scans):
    return sum(scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) for scan in scans)


def test_a_genre_with_nothing_left_reads_no_premise(make_worker):
    dataset, written_out, _ = two_genres_one_written_out()
    scans = candidate_plan(make_worker(), dataset, written_out)
    assert rows_read(scans) == 0, scans


def test_a_genre_with_work_reads_the_premise_it_locks(make_worker):
    dataset, _, with_work = two_genres_one_written_out()
    scans = candidate_plan(make_worker(), dataset, with_work)
    assert rows_read(scans) == 1, scans


def test_a_balanced_study_serves_the_genre_with_work_and_says_no_task_once_none_is_left(make_worker):
    dataset, written_out, with_work = two_genres_one_written_out()
    Premise.objects.filter(genre=with_work, writings_done=0).exclude(
        pk__in=Premise.objects.filter(genre=with_work, writings_done=0).order_by("pk")[:3]
    ).update(writings_done=1)
    study = Study.objects.create(
        slug="genre-nothing-left",
        name="Balanced",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        completion_code="C",
        serving_order=ServingOrder.BALANCED,
    )
    study.pool_genres.set([written_out, with_work])
    served = []
    for n in range(4):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"left-{n}")
        claim = writing_claims.claim_next_premise(worker, study_session=session)
        served.append(None if claim is None else claim.premise.genre_id)
    assert served == [with_work.pk, with_work.pk, with_work.pk, None]
