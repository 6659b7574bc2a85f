# A writer's latest typing records, newest first, from an index of their own (the repeat check of a
# submit outside a study). Built concurrently, as 0009's index is, and plainly inside a transaction.

import importlib

from django.db import migrations, models

AddIndexConcurrentlyOutsideTransactions = importlib.import_module(
    "authorship.migrations.0009_evidence_flags_index"
).AddIndexConcurrentlyOutsideTransactions


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("authorship", "0009_evidence_flags_index"),
    ]

    operations = [
        AddIndexConcurrentlyOutsideTransactions(
            model_name="writingevidence",
            index=models.Index(fields=["worker", "-id"], name="evidence_worker_latest"),
        ),
    ]
