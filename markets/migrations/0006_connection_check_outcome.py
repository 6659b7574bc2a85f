from django.db import migrations, models

# Connections tested before the column say whether the market answered in the first word of their
# line ("Connected to ..."): written down once from it.
BACKFILL_SQL = "UPDATE markets_marketconnection SET last_check_ok = starts_with(last_check, 'Connected')"


def backfill(apps, schema_editor):
    schema_editor.execute(BACKFILL_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("markets", "0005_payment_answer_unknown"),
    ]

    operations = [
        migrations.AddField(
            model_name="marketconnection",
            name="last_check_ok",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
