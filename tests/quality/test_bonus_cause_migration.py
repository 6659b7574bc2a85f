"""The migration that gave the ledger its cause column writes each existing row's cause once, from
the words its writer began the reason with, and a paid row's from the row it pays; the ledger stays
append-only after it."""

from decimal import Decimal

import pytest
from django.db import DatabaseError, transaction
from django.db import connection as db_connection

from quality.models import BonusEntry
from tests.migration_steps import migrated_back
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
    with migrated_back(BEFORE, AFTER) as old:
        write_old_rows(old.get_model("quality", "BonusEntry"), worker, study, session, traps)

    causes = {(row.kind, row.pays_id or row.pk): row.cause for row in BonusEntry.objects.filter(study=study)}
    by_reason = {row.reason: row.pk for row in BonusEntry.objects.filter(study=study, kind="earned")}
    catch, fooled, given, lowercase, long_fooled = (by_reason[reason] for reason in EARNED_REASONS)
    assert causes == {
        ("earned", catch): "catch_trial",
        ("earned", fooled): "fooled_model",
        ("earned", given): "other",
        ("earned", lowercase): "other",
        ("earned", long_fooled): "fooled_model",
        ("paid", catch): "catch_trial",
        ("paid", fooled): "fooled_model",
        ("paid", given): "other",
        ("paid", long_fooled): "fooled_model",
    }
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), db_connection.cursor() as cursor:
        cursor.execute("UPDATE quality_bonusentry SET cause = 'other' WHERE id = %s", [catch])


EARNED_REASONS = (
    "Catch trial matched in study s (not payable: the study's link is open)",
    "Verified example that fooled the model (study s, round 2)",
    "Discretionary bonus: a Catch trial matched twice",
    "catch trial matched, typed by hand",
    # A paid row's reason is cut at 200 characters; its cause is its earned row's all the same.
    "Verified example that fooled the model " + "x" * 160,
)


def write_old_rows(OldEntry, worker, study, session, traps):
    """The earned rows of EARNED_REASONS and a paid row of each but the fourth, as the ledger held
    them before the cause column."""

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

    earned_rows = [
        earn(trap, reason)
        for trap, reason in zip([traps[0], traps[1], None, traps[2], traps[3]], EARNED_REASONS, strict=True)
    ]
    for earned in (*earned_rows[:3], earned_rows[4]):
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
