"""ValidationLabel now belongs to the core (`corpus`); claims and policies point at the core's
models. State only: the tables and their foreign keys stay as they are.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0001_initial"),
        ("crowd", "0001_initial"),
        ("validation", "0002_validation_policy"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="validationclaim",
                    name="pair",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="validation_claims", to="corpus.pair"
                    ),
                ),
                migrations.AlterField(
                    model_name="validationclaim",
                    name="study_session",
                    field=models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to="crowd.studysession"
                    ),
                ),
                migrations.AlterField(
                    model_name="validationclaim",
                    name="worker",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="validation_claims",
                        to="corpus.worker",
                    ),
                ),
                migrations.AlterField(
                    model_name="validationpolicy",
                    name="dataset",
                    field=models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="validation_policy",
                        to="corpus.dataset",
                    ),
                ),
                migrations.DeleteModel(
                    name="ValidationLabel",
                ),
            ],
        ),
    ]
