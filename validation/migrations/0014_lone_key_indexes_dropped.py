"""The foreign keys' own indexes dropped where another index leads with the key, by name (why by
name: collection/migrations/0019_lone_key_indexes_dropped.py)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0038_pair_counted_labels"),
        ("validation", "0013_session_served"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="validationclaim",
                    name="pair",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="validation_claims",
                        to="corpus.pair",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX IF EXISTS validation_validationclaim_pair_id_1097682d",
                    reverse_sql="CREATE INDEX IF NOT EXISTS validation_validationclaim_pair_id_1097682d ON validation_validationclaim (pair_id)",
                ),
            ],
        ),
    ]
