# Where the last tagging job of a scope stopped reading: the next starts after it.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("artifacts", "0008_one_long_task_status"),
    ]

    operations = [
        migrations.AddField(
            model_name="taggingjob",
            name="walked_to",
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
