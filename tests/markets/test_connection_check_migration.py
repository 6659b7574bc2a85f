"""The migration that gave a connection its check's outcome reads it once from the line each
connection tested before it kept: the market answered when the line says "Connected"."""

import pytest

from markets.models import MarketConnection
from tests.markets.conftest import make_study
from tests.migration_steps import migrated_back

pytestmark = pytest.mark.django_db


def test_the_migration_reads_whether_each_connections_last_test_answered():
    studies = [make_study(f"check-{n}") for n in range(3)]
    before, after = [("markets", "0005_payment_answer_unknown")], [("markets", "0006_connection_check_outcome")]
    lines = ["Connected to the MTurk sandbox: balance 10.00 USD.", "Prolific does not know this (404).", ""]
    with migrated_back(before, after) as old:
        made = [
            old.get_model("markets", "MarketConnection").objects.create(
                study_id=study.pk, market="prolific", sealed_credentials="x", webhook_key=f"k{n}", last_check=line
            )
            for n, (study, line) in enumerate(zip(studies, lines, strict=True))
        ]

    outcome = dict(MarketConnection.objects.values_list("pk", "last_check_ok"))
    assert [outcome[row.pk] for row in made] == [True, False, False]
