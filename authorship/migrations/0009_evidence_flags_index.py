# The typing records' flags indexed for the Pairs page's typing and repeated filters. Built
# concurrently: a record is written with every hypothesis, so the table is as large as the written
# corpus and the writing submit appends to it all the time (a plain CREATE INDEX would hold it).
# Inside a transaction (a test migrating a database in its own) the index is built plainly.

from typing import Any

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations


class AddIndexConcurrentlyOutsideTransactions(AddIndexConcurrently):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.in_atomic_block:
            migrations.AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)
        else:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.in_atomic_block:
            migrations.AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
        else:
            super().database_backwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("authorship", "0008_sentence_tally"),
    ]

    operations = [
        AddIndexConcurrentlyOutsideTransactions(
            model_name="writingevidence",
            index=GinIndex(fields=["flags"], name="evidence_flags", opclasses=["jsonb_path_ops"]),
        ),
    ]
