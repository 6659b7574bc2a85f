"""The worker's own exclusion flag goes: exclusions are a team's (0029 carried each into every team),
and a second migration drops it so that no ALTER TABLE meets the deferred checks of 0029's rows."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("corpus", "0032_workers_excluded_by_team")]

    operations = [migrations.RemoveField(model_name="worker", name="is_excluded")]
