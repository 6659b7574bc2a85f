from django.db import migrations, models

# Rows written before the column name their cause in the first words of their reason (every writer
# began it with them): written down once from those words; a paid row takes its earned row's. The ledger refuses UPDATE (its append-only trigger), so the trigger is off for
# this one statement, inside the migration's transaction.
BACKFILL_SQL = """
ALTER TABLE quality_bonusentry DISABLE TRIGGER quality_bonusentry_append_only;
UPDATE quality_bonusentry SET cause = CASE
    WHEN starts_with(reason, 'Catch trial matched') THEN 'catch_trial'
    WHEN starts_with(reason, 'Verified example that fooled the model') THEN 'fooled_model'
    ELSE 'other' END
WHERE kind = 'earned';
UPDATE quality_bonusentry AS paid SET cause = earned.cause
FROM quality_bonusentry AS earned
WHERE paid.kind = 'paid' AND earned.id = paid.pays_id;
ALTER TABLE quality_bonusentry ENABLE TRIGGER quality_bonusentry_append_only;
"""


def backfill(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKFILL_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("quality", "0011_worker_flag_rows"),
        # After the last migration that writes ledger rows without a cause, so that its rows are
        # read here too, whatever order an old database's upgrade takes.
        ("markets", "0004_one_payment_machine"),
    ]

    operations = [
        migrations.AddField(
            model_name="bonusentry",
            name="cause",
            field=models.CharField(
                choices=[
                    ("catch_trial", "catch trial answered as the researchers did"),
                    ("fooled_model", "verified example that fooled the model"),
                    ("other", "other bonus"),
                ],
                default="other",
                max_length=12,
            ),
            preserve_default=False,
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="bonusentry",
            constraint=models.CheckConstraint(
                condition=models.Q(("cause__in", ["catch_trial", "fooled_model", "other"])),
                name="bonus_cause_known",
            ),
        ),
    ]
