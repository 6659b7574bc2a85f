"""The foreign keys' own indexes dropped where another index leads with the same column: each index
more is one more write in every claim or submitted sentence, and the longer index answers the key's
lookups (a cascade, a join). Dropped by name: Django's AlterField drops and re-adds the foreign key
constraint, which checks every row again, and takes any index whose first column is the key for the
key's own, a partial unique index included (`one_open_writing_claim_per_worker`)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0018_premise_groups"),
        ("corpus", "0038_pair_counted_labels"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="writingclaim",
                    name="premise",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="writing_claims",
                        to="corpus.premise",
                    ),
                ),
                migrations.AlterField(
                    model_name="writingclaim",
                    name="worker",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="writing_claims",
                        to="corpus.worker",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX IF EXISTS collection_writingclaim_premise_id_f53f763a",
                    reverse_sql="CREATE INDEX IF NOT EXISTS collection_writingclaim_premise_id_f53f763a ON collection_writingclaim (premise_id)",
                ),
                migrations.RunSQL(
                    "DROP INDEX IF EXISTS collection_writingclaim_worker_id_501090ba",
                    reverse_sql="CREATE INDEX IF NOT EXISTS collection_writingclaim_worker_id_501090ba ON collection_writingclaim (worker_id)",
                ),
            ],
        ),
    ]
