"""The foreign keys' own indexes dropped where another index leads with the key, by name (why by
name: collection/migrations/0019_lone_key_indexes_dropped.py)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0010_evidence_worker_latest"),
        ("corpus", "0038_pair_counted_labels"),
        ("crowd", "0034_code_hold_decisions_on_holds"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="writingevidence",
                    name="study_session",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="writing_evidence",
                        to="crowd.studysession",
                    ),
                ),
                migrations.AlterField(
                    model_name="writingevidence",
                    name="worker",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="writing_evidence",
                        to="corpus.worker",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX IF EXISTS authorship_writingevidence_study_session_id_7c6aa077",
                    reverse_sql="CREATE INDEX IF NOT EXISTS authorship_writingevidence_study_session_id_7c6aa077 ON authorship_writingevidence (study_session_id)",
                ),
                migrations.RunSQL(
                    "DROP INDEX IF EXISTS authorship_writingevidence_worker_id_eb6ff74d",
                    reverse_sql="CREATE INDEX IF NOT EXISTS authorship_writingevidence_worker_id_eb6ff74d ON authorship_writingevidence (worker_id)",
                ),
            ],
        ),
    ]
