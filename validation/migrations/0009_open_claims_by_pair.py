# The open validation claims indexed by pair: a pair's live claims can then never be
# counted by walking every open claim, whatever the statistics say. Built before the expiry index
# is dropped, both concurrently on PostgreSQL (writers claim all the time); plain elsewhere.

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


def on_postgres(concurrent, plain):
    class Operation(concurrent):
        def database_forwards(self, app_label, schema_editor, from_state, to_state):
            if schema_editor.connection.vendor == "postgresql":
                super().database_forwards(app_label, schema_editor, from_state, to_state)
            else:
                plain.database_forwards(self, app_label, schema_editor, from_state, to_state)

        def database_backwards(self, app_label, schema_editor, from_state, to_state):
            if schema_editor.connection.vendor == "postgresql":
                super().database_backwards(app_label, schema_editor, from_state, to_state)
            else:
                plain.database_backwards(self, app_label, schema_editor, from_state, to_state)

    return Operation


AddIndex = on_postgres(AddIndexConcurrently, migrations.AddIndex)
RemoveIndex = on_postgres(RemoveIndexConcurrently, migrations.RemoveIndex)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("validation", "0008_claim_take_backs"),
    ]

    operations = [
        AddIndex(
            model_name="validationclaim",
            index=models.Index(
                condition=models.Q(("status", "open")),
                fields=["pair", "expires_at"],
                include=("is_catch_trial",),
                name="valclaim_open",
            ),
        ),
        RemoveIndex(
            model_name="validationclaim",
            name="valclaim_open_expiry",
        ),
    ]
