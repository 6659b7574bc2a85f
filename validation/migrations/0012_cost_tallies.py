"""The cost page's validation figures per study as tallies (`validation.cost_tally`),
counted here from the claims and pairs already there, as `fresh_bought` and `fresh_credited` count
them: a countable claim is submitted, ordinary (no catch trial) and in a study session."""

import django.db.models.deletion
from django.db import migrations, models

COUNTABLE = (
    "FROM validation_validationclaim c JOIN collection_studysession s ON s.id = c.study_session_id "
    "JOIN collection_pair p ON p.id = c.pair_id JOIN collection_premise r ON r.id = p.premise_id "
    "WHERE c.status = 'submitted' AND NOT c.is_catch_trial"
)
# Each tally's columns, and where the count reads them.
BOUGHT = {"study_id": "s.study_id", "dataset_id": "p.dataset_id", "split": "r.split", "genre_id": "r.genre_id"}
STATE = ("label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "imported_gold", "stopped_early")
CREDITED = {**BOUGHT, **{name: f"p.{name}" for name in STATE}}


def count_tallies(apps, schema_editor):
    for table, columns, credited_only in (
        ("validation_boughtlabeltally", BOUGHT, ""),
        ("validation_creditedpairtally", CREDITED, " AND c.credited"),
    ):
        read = ", ".join(columns.values())
        schema_editor.execute(
            f"INSERT INTO {table} ({', '.join(columns)}, n) SELECT {read}, count(*) {COUNTABLE}{credited_only} "
            f"GROUP BY {read}"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0031_pair_tally_validation_flags"),
        ("crowd", "0026_study_hold_rules"),
        ("validation", "0011_catch_claims_by_pair"),
    ]

    operations = [
        migrations.CreateModel(
            name="BoughtLabelTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("split", models.CharField(blank=True, max_length=5)),
                ("n", models.BigIntegerField()),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.dataset"
                    ),
                ),
                (
                    "genre",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.genre"
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="crowd.study"),
                ),
            ],
            options={
                "verbose_name_plural": "bought label tallies",
                "abstract": False,
            },
        ),
        migrations.CreateModel(
            name="CreditedPairTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("split", models.CharField(blank=True, max_length=5)),
                ("n", models.BigIntegerField()),
                ("label_count", models.SmallIntegerField()),
                ("entailment_votes", models.SmallIntegerField()),
                ("neutral_votes", models.SmallIntegerField()),
                ("contradiction_votes", models.SmallIntegerField()),
                ("imported_gold", models.CharField(blank=True, default="", max_length=20)),
                ("stopped_early", models.BooleanField(default=False)),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.dataset"
                    ),
                ),
                (
                    "genre",
                    models.ForeignKey(
                        db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.genre"
                    ),
                ),
                (
                    "study",
                    models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="crowd.study"),
                ),
            ],
            options={
                "verbose_name_plural": "credited pair tallies",
                "abstract": False,
            },
        ),
        migrations.RunPython(count_tallies, migrations.RunPython.noop),
    ]
