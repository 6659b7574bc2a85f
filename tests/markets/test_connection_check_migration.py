"""The migration that gave a connection its check's outcome reads it once from the line each
connection tested before it kept: the market answered when the line says "Connected"."""

import pytest
from django.db import connection as db_connection
from django.db.migrations.executor import MigrationExecutor

from markets.models import MarketConnection
from tests.markets.conftest import make_study

pytestmark = pytest.mark.django_db


def test_the_migration_reads_whether_each_connections_last_test_answered():
    studies = [make_study(f"check-{n}") for n in range(3)]
    before, after = [("markets", "0005_payment_answer_unknown")], [("markets", "0006_connection_check_outcome")]
    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(db_connection)
    executor.migrate(before)
    OldConnection = executor.loader.project_state(before).apps.get_model("markets", "MarketConnection")
    lines = ["Connected to the MTurk sandbox: balance 10.00 USD.", "Prolific does not know this (404).", ""]
    made = [
        OldConnection.objects.create(
            study_id=study.pk, market="prolific", sealed_credentials="x", webhook_key=f"k{n}", last_check=line
        )
        for n, (study, line) in enumerate(zip(studies, lines, strict=True))
    ]
    MigrationExecutor(db_connection).migrate(after)
    executor = MigrationExecutor(db_connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    outcome = dict(MarketConnection.objects.values_list("pk", "last_check_ok"))
    assert [outcome[row.pk] for row in made] == [True, False, False]
