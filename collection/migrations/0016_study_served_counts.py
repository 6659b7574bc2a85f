"""The balanced serving order's count of a study's writing claims per genre × import file
(`collection.models.StudyServed`), filled from the claims made so far (shard 0)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0015_premise_genre_claim_order"),
        ("corpus", "0033_remove_worker_is_excluded"),
        ("crowd", "0031_study_shape_check"),
    ]

    operations = [
        migrations.CreateModel(
            name="StudyServed",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source", models.CharField(blank=True, max_length=255)),
                ("shard", models.SmallIntegerField()),
                ("claims", models.BigIntegerField(default=0)),
                (
                    "genre",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.genre"
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="crowd.study"
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "study served counts",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("study", "genre", "source", "shard"),
                        name="one_served_count_per_study_genre_source_shard",
                    )
                ],
            },
        ),
        migrations.RunSQL(
            "INSERT INTO collection_studyserved (study_id, genre_id, source, shard, claims)"
            " SELECT s.study_id, p.genre_id, p.source, 0, COUNT(*) FROM collection_writingclaim w"
            " INNER JOIN collection_studysession s ON s.id = w.study_session_id"
            " INNER JOIN collection_premise p ON p.id = w.premise_id"
            " GROUP BY s.study_id, p.genre_id, p.source",
            migrations.RunSQL.noop,
        ),
    ]
