from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("quality", "0004_catch_trials_and_bonus_ledger")]

    operations = [
        migrations.AddField(
            model_name="qualificationtest",
            name="show_wrong_items_after_last_try",
            field=models.BooleanField(
                default=False,
                help_text="After the last allowed try only, tell the worker which items of that try were wrong. "
                "Before it, a try says pass or fail and nothing more (a count of matches would leak the answers).",
            ),
        ),
    ]
