"""The writing claim reads every table by a key, whatever the tables held when its plans were made:
its function keeps one plan per statement for the connection (`base.cached_plans`), and planned
while the claim table was empty (a new deployment's first claims), a sequential scan of it costs
nothing. That plan is kept, and every claim after on that connection reads every claim of the crowd
as the table grows."""

import pytest
from django.contrib.auth.models import User
from django.db import connection

from base.cached_plans import create_once
from collection import writing_claims
from collection.models import StudyServed, WritingClaim
from corpus.models import Genre, Worker
from crowd.models import ClaimStatus, ServingOrder, StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db

CROWD, PREMISES_A_GENRE = 60, 25


def statements_of_one_claim(worker, session):
    """The plan of each statement the claim ran, as PostgreSQL's auto_explain reports it (the tests
    connect as a superuser), for this transaction only."""
    with connection.cursor() as cursor:
        cursor.execute("LOAD 'auto_explain'")
        for setting in ("log_min_duration = 0", "log_nested_statements = on", "log_level = notice"):
            cursor.execute(f"SET LOCAL auto_explain.{setting}")
        cursor.execute("SET LOCAL client_min_messages = notice")
    notices = connection.connection.notices
    del notices[:]
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL auto_explain.log_min_duration = -1")
    return claim, [notice for notice in notices if "Query Text:" in notice]


def test_a_claim_reads_by_keys_after_its_plans_were_made_on_an_empty_claim_table():
    dataset, fiction = writing_setup("keyed-reads")
    travel, _ = Genre.objects.get_or_create(
        slug="test-travel", defaults={"name": "Test travel", "is_training": True, "family": fiction.family}
    )
    premises = add_premises(dataset, fiction, PREMISES_A_GENRE) + add_premises(
        dataset, travel, PREMISES_A_GENRE, start=PREMISES_A_GENRE
    )
    study = make_study(dataset, slug="keyed-reads", task_kind=TaskKind.WRITING, serving_order=ServingOrder.BALANCED)
    study.pool_genres.set([fiction, travel])
    claims, served = WritingClaim._meta.db_table, StudyServed._meta.db_table
    users = User.objects.bulk_create(User(username=f"keyed-{n}") for n in range(CROWD + 2))
    writers = Worker.objects.bulk_create(Worker(user=user) for user in users)
    # The claim's function made first, on a connection of its own: it names the claim table's row
    # type, which that connection could not read once this transaction has truncated the table.
    create_once(writing_claims._claim_statement())
    with connection.cursor() as cursor:
        # As a new deployment's: not a page yet (an earlier test's rolled-back rows leave pages,
        # which the planner would count), analysed, so the connection's plans are made again.
        cursor.execute(f"TRUNCATE {claims}, {served} CASCADE")
        cursor.execute(f"ANALYZE {claims}, {served}")
    # The first claim on this connection plans the function's statements, the claim table empty.
    first = StudySession.objects.create(study=study, worker=writers[CROWD + 1], external_session_id="first")
    present(writing_claims.claim_next_premise(first.worker, study_session=first))
    # Then the crowd's claims: each of CROWD writers wrote every premise once, long ago.
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {claims} (token, worker_id, premise_id, status, created_at, expires_at, take_backs)"
            " SELECT gen_random_uuid(), w, p, %s, now() - interval '2 days', now() - interval '1 day', 0"
            " FROM unnest(%s::bigint[]) w, unnest(%s::bigint[]) p",
            [ClaimStatus.SUBMITTED, [w.pk for w in writers[:CROWD]], [p.pk for p in premises]],
        )
    newcomer = writers[CROWD]
    session = StudySession.objects.create(study=study, worker=newcomer, external_session_id="keyed")

    claim, statements = statements_of_one_claim(newcomer, session)

    assert claim.premise_id in {p.pk for p in premises}
    assert WritingClaim.objects.filter(worker=newcomer).count() == 1
    # The function's statements were reported (the claim's own, the candidate lock among them).
    assert any("collection_premise_claim_order" in text for text in statements), statements
    whole = [text for text in statements if "Seq Scan on" in text]
    assert not [text for text in whole if f"Seq Scan on {claims}" in text], whole
    assert whole == []
