# "A label written after the latest aggregation run", asked on every beat (issue 53). Built
# concurrently: the label table is the one every validator writes to, and at MultiNLI scale holds
# millions of rows (a plain CREATE INDEX would hold its writers for the whole build).

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("corpus", "0033_remove_worker_is_excluded"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="validationlabel",
            index=models.Index(fields=["created_at"], name="label_time"),
        ),
    ]
