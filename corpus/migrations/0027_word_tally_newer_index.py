# The word tally's "newer than the mark" probe per dataset. Built concurrently on
# PostgreSQL: the table holds millions of rows at MultiNLI scale and writers append to it all the
# time (a plain CREATE INDEX would hold them for its whole build). Elsewhere a plain index.

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class AddIndexConcurrentlyOnPostgres(AddIndexConcurrently):
    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            migrations.AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            migrations.AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("corpus", "0026_adjudication_model_vote"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="wordtally",
            index=models.Index(fields=["dataset", "id"], name="word_tally_newer"),
        ),
    ]
