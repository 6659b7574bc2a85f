import django.core.validators
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0027_study_no_consent_code"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="contributions_on_withdrawal",
            field=models.CharField(
                choices=[("keep", "keep pseudonymous contributions"), ("delete", "delete contributions")],
                default="keep",
                help_text="When a participant withdraws or asks for erasure: keep their labels and writings without their identity, or delete them from the corpus and every figure (docs/privacy.md).",
                max_length=6,
            ),
        ),
        migrations.AddField(
            model_name="study",
            name="personal_data_retention_days",
            field=models.PositiveIntegerField(
                default=90,
                help_text="Days a participant's market ids, device ids and typing records are kept after their visit ended, once the study is inactive; then they are pseudonymised (docs/privacy.md).",
                validators=[django.core.validators.MinValueValidator(1)],
            ),
        ),
    ]
