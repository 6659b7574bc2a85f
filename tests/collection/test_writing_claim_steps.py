"""The writing claim's call (`collection.writing_claims._claim_statement`): a study served in random
order gets its own permutation of the premises through the claim itself, a call that fails inside a
caller's transaction leaves that transaction usable for the claim's retry, a premise found full under
its lock is let go before the next call, and the candidate statement keeps what it is asked of its
lock and its order."""

import hashlib

import psycopg2
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from collection import writing_claims
from corpus.models import Genre, Premise
from crowd.models import ServingOrder, StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db

PERMUTED = 4294967291


def test_a_study_served_in_random_order_claims_its_own_permutation_of_the_premises(make_worker):
    dataset, genre = writing_setup("random-steps")
    premises = add_premises(dataset, genre, 12)
    study = make_study(dataset, slug="random-steps", task_kind=TaskKind.WRITING, serving_order=ServingOrder.RANDOM)
    seed = int(hashlib.sha256(f"{study.pk}:{study.code_secret}".encode()).hexdigest()[:8], 16) % PERMUTED
    expected = [p.pk for p in sorted(premises, key=lambda p: ((p.pk * 2654435761 + seed) % PERMUTED, p.pk))]

    claimed = []
    for n in range(len(premises)):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"r{n}")
        claimed.append(present(writing_claims.claim_next_premise(worker, study_session=session)).premise_id)

    assert claimed == expected
    assert claimed != sorted(claimed)  # not import order: the permutation moved something


def test_a_call_that_fails_inside_the_callers_transaction_leaves_it_usable_for_the_retry(make_worker):
    dataset, genre = writing_setup("step-retry")
    add_premises(dataset, genre, 2)
    worker = make_worker()
    with connection.cursor() as cursor:
        # The first insert of a claim fails as a second tab's claim would make it fail (a unique
        # violation); the retry's succeeds. A sequence counts the tries: a rollback keeps its value.
        cursor.execute("CREATE TEMPORARY SEQUENCE claim_tries")
        cursor.execute(
            "CREATE FUNCTION pg_temp.fail_first_claim() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
            " IF nextval('claim_tries') = 1 THEN RAISE unique_violation USING MESSAGE = 'a claim made meanwhile';"
            " END IF; RETURN NEW; END $$"
        )
        cursor.execute(
            "CREATE TRIGGER fail_first_claim BEFORE INSERT ON collection_writingclaim"
            " FOR EACH ROW EXECUTE FUNCTION pg_temp.fail_first_claim()"
        )

    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM collection_writingclaim WHERE worker_id = %s", [worker.pk])
        assert cursor.fetchone()[0] == 1
    assert claim.worker_id == worker.pk


def test_a_candidate_statement_waits_or_skips_and_orders_as_it_is_asked(make_worker):
    dataset, _ = writing_setup("statement-asks")
    worker, now = make_worker(), timezone.now()

    skipping, _ = writing_claims.candidate_statement(worker, now, dataset=dataset)
    waiting, _ = writing_claims.candidate_statement(worker, now, dataset=dataset, wait=True)
    shuffled, params = writing_claims.candidate_statement(worker, now, dataset=dataset, shuffle_seed=PERMUTED + 5)

    assert skipping.endswith("SKIP LOCKED") and not waiting.endswith("SKIP LOCKED")
    assert "MOD(o.premise_id * 2654435761 + %s, 4294967291)" in shuffled and params[-1] == 5
    assert "MOD(" not in skipping


@pytest.mark.django_db(transaction=True)
def test_a_premise_found_full_under_its_lock_is_let_go_and_the_claim_takes_the_next(make_worker):
    dataset, genre = writing_setup("found-full")
    written, free = add_premises(dataset, genre, 2)
    worker = make_worker()
    # The premise is written, but its claim-order row says not yet: the candidate lock takes it and
    # the recount under the lock finds it full, as when a claim committed meanwhile took its place.
    Premise.objects.filter(pk=written.pk).update(writings_done=1)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {writing_claims.ORDER_TABLE} SET writings_done = 0 WHERE premise_id = %s", [written.pk])

    other = psycopg2.connect(**connection.get_connection_params())
    try:
        with transaction.atomic():  # a caller's transaction: the claim's calls run in savepoints
            with CaptureQueriesContext(connection) as statements:
                claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
            # The first call's lock went with its savepoint: another claimer may lock the premise now.
            with other.cursor() as cursor:
                cursor.execute(
                    f"SELECT premise_id FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s"
                    " FOR NO KEY UPDATE NOWAIT",
                    [written.pk],
                )
                assert cursor.fetchall() == [(written.pk,)]
            other.rollback()
    finally:
        other.close()

    assert claim.premise_id == free.pk
    calls = [q["sql"] for q in statements.captured_queries if "collection_writing_claim_" in q["sql"]]
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("order", "pooled"),
    [
        (ServingOrder.BALANCED, True),  # each genre in turn: the one-genre walk
        (ServingOrder.IMPORTED, True),  # the pool's two genres at once
        (ServingOrder.RANDOM, True),
        (ServingOrder.IMPORTED, False),  # no pool: the dataset's every genre
    ],
)
def test_a_studys_claims_keep_to_its_dataset_and_its_pools_genres(make_worker, order, pooled):
    # Another collected dataset holds the same genres, its premises added first, so a candidate
    # statement that forgot the dataset or the genres would serve them.
    other, fiction = writing_setup("other-collection")
    travel, third = (
        Genre.objects.create(slug=slug, name=slug, is_training=True, family=fiction.family) for slug in ("g-two", "g-3")
    )
    for genre in (fiction, travel, third):
        add_premises(other, genre, 3, start=100 * genre.pk)
    dataset, _ = writing_setup("own-collection")
    for genre in (fiction, travel, third):
        add_premises(dataset, genre, 3, start=1000 + 100 * genre.pk)
    study = make_study(dataset, slug=f"keeps-{order}-{pooled}", task_kind=TaskKind.WRITING, serving_order=order)
    if pooled:
        study.pool_genres.set([fiction, travel])

    claimed = []
    for n in range(6 if pooled else 9):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"k{n}")
        claimed.append(present(writing_claims.claim_next_premise(worker, study_session=session)).premise)

    assert {premise.dataset_id for premise in claimed} == {dataset.pk}
    expected = {fiction.pk, travel.pk} if pooled else {fiction.pk, travel.pk, third.pk}
    assert {premise.genre_id for premise in claimed} == expected


@pytest.mark.django_db(transaction=True)
def test_a_claim_skips_a_premise_another_claimer_holds_and_locks_only_the_one_it_takes(make_worker):
    dataset, genre = writing_setup("skips-held")
    held, taken, after = add_premises(dataset, genre, 3)
    worker = make_worker()
    other = psycopg2.connect(**connection.get_connection_params())
    try:
        with other.cursor() as cursor:  # another claimer, in the middle of its claim on the first premise
            cursor.execute(
                f"SELECT 1 FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s FOR NO KEY UPDATE", [held.pk]
            )
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")  # a claim that waited would fail here
            claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
            with other.cursor() as cursor:  # the premise after it is free for the next claimer
                cursor.execute("SAVEPOINT free")
                cursor.execute(
                    f"SELECT premise_id FROM {writing_claims.ORDER_TABLE} WHERE premise_id = %s FOR NO KEY UPDATE NOWAIT",
                    [after.pk],
                )
                assert cursor.fetchall() == [(after.pk,)]
    finally:
        other.rollback()
        other.close()
    assert claim.premise_id == taken.pk
