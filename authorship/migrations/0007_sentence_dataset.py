"""A written sentence keeps its pair's dataset (filled from the pairs), so a team's figures of
copies read their own rows; a writer's sentences and sessions are indexed with it."""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
UPDATE authorship_writtensentence AS sentence SET dataset_id = pair.dataset_id
FROM collection_pair AS pair
WHERE pair.id = sentence.pair_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0006_typing_tally"),
        ("corpus", "0033_remove_worker_is_excluded"),
    ]

    operations = [
        migrations.AddField(
            model_name="writtensentence",
            name="dataset",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.dataset"
            ),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.AlterField(
            model_name="writtensentence",
            name="dataset",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.dataset"),
        ),
        migrations.RemoveIndex(model_name="writtensentence", name="written_sentence_sessions"),
        migrations.AddIndex(
            model_name="writtensentence",
            index=models.Index(fields=["worker", "dataset", "study_session"], name="written_sentence_sessions"),
        ),
    ]
