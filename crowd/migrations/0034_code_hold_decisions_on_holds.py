from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    """The decisions live on the holds (0033 copied them): the session's own columns go."""

    dependencies = [
        ("crowd", "0033_code_holds_from_reasons"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveField(
            model_name="studysession",
            name="code_hold_decided_at",
        ),
        migrations.RemoveField(
            model_name="studysession",
            name="code_hold_decided_by",
        ),
        migrations.RemoveField(
            model_name="studysession",
            name="code_hold_decision",
        ),
        migrations.AlterField(
            model_name="studysession",
            name="code_held_reason",
            field=models.CharField(blank=True, editable=False, max_length=300),
        ),
    ]
