"""Trigram GIN indexes for the admin's pair search (PostgreSQL only; nothing on SQLite).

The admin matches `upper(column) LIKE upper('%term%')`; a GIN index with gin_trgm_ops on the
same upper(column) answers that without reading every pair (corpus.admin_pairs.PairAdmin).
"""

from django.db import migrations

INDEXES = [
    ("pair_hypothesis_trgm", "collection_pair", "hypothesis"),
    ("pair_pair_id_trgm", "collection_pair", "pair_id"),
    ("premise_text_trgm", "collection_premise", "text"),
    ("premise_prompt_id_trgm", "collection_premise", "prompt_id"),
]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, table, column in INDEXES:
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (upper({column}) gin_trgm_ops)")


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, _, _ in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0006_maintained_aggregates"),
    ]

    operations = [migrations.RunPython(create, drop)]
