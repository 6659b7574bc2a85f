# Each of the Pairs page's flag filters gets a partial index of the pairs of the records holding its
# flags, in place of the GIN index of every record's flags: a filter's ids are then read from its
# own index alone, in order. Built concurrently (the writing submit appends a record with every
# hypothesis) and plainly inside a transaction, as 0009's index was.

import importlib
from typing import Any

from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations, models

import authorship.flag_lookup

AddIndexConcurrentlyOutsideTransactions = importlib.import_module(
    "authorship.migrations.0009_evidence_flags_index"
).AddIndexConcurrentlyOutsideTransactions


class RemoveIndexConcurrentlyOutsideTransactions(RemoveIndexConcurrently):
    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.in_atomic_block:
            migrations.RemoveIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)
        else:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any) -> None:
        if schema_editor.connection.in_atomic_block:
            migrations.RemoveIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)
        else:
            super().database_backwards(app_label, schema_editor, from_state, to_state)


def pairs_holding(path: str) -> models.Q:
    return models.Q(authorship.flag_lookup.MatchesPath(models.F("flags"), models.Value(path)))


TYPING = (
    '$[*] ? (@ == "machine-cadence" || @ == "no-evidence" || @ == "not-typed" || @ == "pasted"'
    ' || @ == "pasted-after-away" || @ == "times-outside-claim" || @ == "too-fast")'
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("authorship", "0011_lone_key_indexes_dropped"),
    ]

    operations = [
        AddIndexConcurrentlyOutsideTransactions(
            model_name="writingevidence",
            index=models.Index(condition=pairs_holding(TYPING), fields=["pair"], name="evidence_typing_pairs"),
        ),
        AddIndexConcurrentlyOutsideTransactions(
            model_name="writingevidence",
            index=models.Index(
                condition=pairs_holding('$[*] ? (@ == "repeated")'), fields=["pair"], name="evidence_repeated_pairs"
            ),
        ),
        AddIndexConcurrentlyOutsideTransactions(
            model_name="writingevidence",
            index=models.Index(
                condition=pairs_holding('$[*] ? (@ == "copy")'), fields=["pair"], name="evidence_copy_pairs"
            ),
        ),
        RemoveIndexConcurrentlyOutsideTransactions(model_name="writingevidence", name="evidence_flags"),
    ]
