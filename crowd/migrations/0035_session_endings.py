from django.db import migrations, models

# Sessions closed before the column name how they ended in the first words of `closed_reason`
# (the market's "returned on Prolific", the withdrawal's and the erasure's sentences): written
# down once from those words; a closed session whose words name none is "other" (shown "closed").
BACKFILL_SQL = """
UPDATE collection_studysession SET ended_as = CASE
    WHEN starts_with(closed_reason, 'returned') THEN 'returned'
    WHEN starts_with(closed_reason, 'timed out') THEN 'timed_out'
    WHEN starts_with(closed_reason, 'rejected') THEN 'rejected'
    WHEN closed_reason = 'Withdrawn by the participant' THEN 'withdrawn'
    WHEN closed_reason = 'erased at the participant''s request' THEN 'erased'
    ELSE 'other' END
WHERE closed_at IS NOT NULL;
"""


def backfill(apps, schema_editor):
    schema_editor.execute(BACKFILL_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0034_code_hold_decisions_on_holds"),
    ]

    operations = [
        migrations.AddField(
            model_name="studysession",
            name="ended_as",
            field=models.CharField(
                blank=True,
                choices=[
                    ("returned", "returned"),
                    ("timed_out", "timed out"),
                    ("rejected", "rejected"),
                    ("withdrawn", "withdrawn by the participant"),
                    ("erased", "erased at the participant's request"),
                    ("other", "closed"),
                ],
                max_length=10,
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="studysession",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("closed_at__isnull", True), ("ended_as", "")),
                    models.Q(
                        ("closed_at__isnull", False),
                        ("ended_as__in", ["returned", "timed_out", "rejected", "withdrawn", "erased", "other"]),
                    ),
                    _connector="OR",
                ),
                name="a_closed_session_says_how_it_ended",
            ),
        ),
    ]
