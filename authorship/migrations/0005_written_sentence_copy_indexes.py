"""The workers page's copies sized by the copies: whose sentence a copy copies, kept on the copy
(backfilled from the copied sentence), and indexes for the copiers, the groups and a group's
members, and a writer's sentences and sessions."""

import django.db.models.functions.comparison
from django.db import migrations, models

BACKFILL = """
UPDATE authorship_writtensentence AS copy SET copies_other_writer = (copied.worker_id <> copy.worker_id)
FROM authorship_writtensentence AS copied
WHERE copied.id = copy.copy_of_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0004_network_sightings_sense_scores"),
        ("corpus", "0033_remove_worker_is_excluded"),
        ("crowd", "0034_code_hold_decisions_on_holds"),
    ]

    operations = [
        migrations.AddField(
            model_name="writtensentence",
            name="copies_other_writer",
            field=models.BooleanField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name="writtensentence",
            index=models.Index(
                condition=models.Q(("copy_of__isnull", False)),
                fields=["worker", "copies_other_writer"],
                name="written_sentence_copier",
            ),
        ),
        migrations.AddIndex(
            model_name="writtensentence",
            index=models.Index(
                condition=models.Q(("cluster_root__isnull", False)),
                fields=["cluster_root"],
                name="written_sentence_in_group",
            ),
        ),
        migrations.AddIndex(
            model_name="writtensentence",
            index=models.Index(
                django.db.models.functions.comparison.Coalesce("cluster_root", "id"), name="written_sentence_cluster"
            ),
        ),
        migrations.AddIndex(
            model_name="writtensentence",
            index=models.Index(fields=["worker", "study_session"], name="written_sentence_sessions"),
        ),
    ]
