"""The migration that gave the ledger its cause column writes each existing row's cause once, from
the words its writer began the reason with, and a paid row's from the row it pays; the ledger stays
append-only after it."""

from decimal import Decimal

import pytest
from django.db import DatabaseError, transaction
from django.db import connection as db_connection
from django.db.migrations.executor import MigrationExecutor

from quality.models import BonusEntry
from tests.quality.test_catch_trials import catch_pair, make_study, session_for
from tests.validation.validation_factories import make_dataset

pytestmark = pytest.mark.django_db

BEFORE = [("quality", "0011_worker_flag_rows")]
AFTER = [("quality", "0012_bonus_cause_column")]


def test_the_migration_reads_each_rows_cause_from_its_reason_once_and_a_paid_rows_from_its_earned_row(make_worker):
    dataset = make_dataset()
    traps = [catch_pair(dataset) for _ in range(4)]
    study = make_study(dataset)
    worker = make_worker()
    session = session_for(study, worker)
    # The test's transaction: foreign keys checked at once, so no pending check blocks an ALTER TABLE.
    with db_connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(db_connection)
    executor.migrate(BEFORE)
    OldEntry = executor.loader.project_state(BEFORE).apps.get_model("quality", "BonusEntry")

    def earn(trap, reason):
        return OldEntry.objects.create(
            kind="earned",
            worker_id=worker.pk,
            study_id=study.pk,
            study_session_id=session.pk,
            pair_id=trap.pk if trap else None,
            amount=Decimal("1.00"),
            currency="USD",
            reason=reason,
        )

    catch = earn(traps[0], "Catch trial matched in study s (not payable: the study's link is open)")
    fooled = earn(traps[1], "Verified example that fooled the model (study s, round 2)")
    given = earn(None, "Discretionary bonus: a Catch trial matched twice")
    lowercase = earn(traps[2], "catch trial matched, typed by hand")
    # A paid row's reason is cut at 200 characters; its cause is its earned row's all the same.
    long_fooled = earn(traps[3], "Verified example that fooled the model " + "x" * 160)
    for earned in (catch, fooled, given, long_fooled):
        OldEntry.objects.create(
            kind="paid",
            worker_id=worker.pk,
            study_id=study.pk,
            study_session_id=session.pk,
            pair_id=earned.pair_id,
            amount=earned.amount,
            currency="USD",
            reason=f"Paid: {earned.reason}"[:200],
            pays_id=earned.pk,
        )
    MigrationExecutor(db_connection).migrate(AFTER)
    executor = MigrationExecutor(db_connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    causes = {(row.kind, row.pays_id or row.pk): row.cause for row in BonusEntry.objects.filter(study=study)}
    assert causes == {
        ("earned", catch.pk): "catch_trial",
        ("earned", fooled.pk): "fooled_model",
        ("earned", given.pk): "other",
        ("earned", lowercase.pk): "other",
        ("earned", long_fooled.pk): "fooled_model",
        ("paid", catch.pk): "catch_trial",
        ("paid", fooled.pk): "fooled_model",
        ("paid", given.pk): "other",
        ("paid", long_fooled.pk): "fooled_model",
    }
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), db_connection.cursor() as cursor:
        cursor.execute("UPDATE quality_bonusentry SET cause = 'other' WHERE id = %s", [catch.pk])
