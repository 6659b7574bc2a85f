# The bonus page lists a study's unpaid bonuses a page at a time in the ledger's order: this index
# lets it walk them in that order and stop at the page's rows. Built concurrently: a validation
# submit writes its catch-trial bonuses to the ledger (a plain CREATE INDEX would hold it).
# Inside a transaction (a test migrating a database in its own) the index is built plainly.

import importlib

from django.db import migrations, models

AddIndexConcurrentlyOutsideTransactions = importlib.import_module(
    "authorship.migrations.0009_evidence_flags_index"
).AddIndexConcurrentlyOutsideTransactions


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("quality", "0012_bonus_cause_column"),
    ]

    operations = [
        AddIndexConcurrentlyOutsideTransactions(
            model_name="bonusentry",
            index=models.Index(
                condition=models.Q(("kind", "earned")),
                fields=["study", "created_at", "id"],
                name="bonus_earned_in_order",
            ),
        ),
    ]
