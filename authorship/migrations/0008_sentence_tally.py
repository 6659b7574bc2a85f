"""The sentence tally (authorship.sentence_tally), filled from the written sentences there are."""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
INSERT INTO authorship_sentencetally (dataset_id, worker_id, study_session_id, copies_other_writer, cluster_root_id, n)
SELECT dataset_id, worker_id, study_session_id, copies_other_writer, cluster_root_id, count(*)
FROM authorship_writtensentence
GROUP BY 1, 2, 3, 4, 5
"""


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0007_sentence_dataset"),
        ("corpus", "0034_pair_gold_ne_author"),
        ("crowd", "0034_code_hold_decisions_on_holds"),
    ]

    operations = [
        migrations.CreateModel(
            name="SentenceTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("n", models.BigIntegerField()),
                ("copies_other_writer", models.BooleanField(null=True)),
                (
                    "cluster_root",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="authorship.writtensentence",
                    ),
                ),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.dataset"
                    ),
                ),
                (
                    "study_session",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="crowd.studysession",
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
                "verbose_name_plural": "sentence tallies",
                "abstract": False,
            },
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        # The copies figures read the tally: the sentences' indexes for them go.
        migrations.RemoveIndex(model_name="writtensentence", name="written_sentence_cluster"),
        migrations.RemoveIndex(model_name="writtensentence", name="written_sentence_sessions"),
    ]
