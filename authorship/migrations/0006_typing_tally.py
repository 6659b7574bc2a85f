"""The typing tally (authorship.typing_tally), filled from the typing records there are."""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
INSERT INTO authorship_typingtally (dataset_id, study_id, worker_id, day, flagged, has_evidence, n)
SELECT study.dataset_id, study.id, record.worker_id, (record.created_at AT TIME ZONE 'UTC')::date,
       record.flagged, record.has_evidence, count(*)
FROM authorship_writingevidence record
LEFT JOIN collection_studysession session ON session.id = record.study_session_id
LEFT JOIN collection_study study ON study.id = session.study_id
GROUP BY 1, 2, 3, 4, 5, 6
"""


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0005_written_sentence_copy_indexes"),
        ("corpus", "0033_remove_worker_is_excluded"),
        ("crowd", "0034_code_hold_decisions_on_holds"),
    ]

    operations = [
        migrations.CreateModel(
            name="TypingTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("n", models.BigIntegerField()),
                ("day", models.DateField()),
                ("flagged", models.BooleanField()),
                ("has_evidence", models.BooleanField()),
                (
                    "dataset",
                    models.ForeignKey(
                        null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.dataset"
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="crowd.study",
                    ),
                ),
                (
                    "worker",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.worker"
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "typing tallies",
                "abstract": False,
                "indexes": [models.Index(fields=["study", "day"], name="typing_tally_study_day")],
            },
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
    ]
