"""The tables a participant's claims and submits write to carry no index that another index makes
redundant (one whose columns lead another's): each is one more write in every claim or sentence.
And every index and constraint their models declare is in the database, so no migration that
dropped a redundant one took a declared one with it."""

import pytest
from django.apps import apps
from django.db import connection

pytestmark = pytest.mark.django_db

WRITE_PATH_MODELS = ("collection.WritingClaim", "authorship.WritingEvidence", "validation.ValidationClaim")

LEADING_PREFIXES = """
WITH indexed AS (
    SELECT i.indexrelid, i.indisunique, string_to_array(i.indkey::text, ' ') AS columns,
           i.indpred IS NULL AND i.indexprs IS NULL AS whole, c.relam
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
    WHERE i.indrelid = %s::regclass
)
SELECT shorter.indexrelid::regclass::text, longer.indexrelid::regclass::text
FROM indexed shorter JOIN indexed longer ON shorter.indexrelid <> longer.indexrelid
WHERE NOT shorter.indisunique AND shorter.whole AND longer.whole AND shorter.relam = longer.relam
  AND cardinality(shorter.columns) < cardinality(longer.columns)
  AND shorter.columns = longer.columns[1:cardinality(shorter.columns)]
"""


@pytest.mark.parametrize("label", WRITE_PATH_MODELS)
def test_no_index_of_a_write_path_table_leads_another(label):
    table = apps.get_model(label)._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(LEADING_PREFIXES, [table])
        assert cursor.fetchall() == []


@pytest.mark.parametrize("label", WRITE_PATH_MODELS)
def test_every_index_and_constraint_the_model_declares_is_in_the_database(label):
    meta = apps.get_model(label)._meta
    declared = {index.name for index in meta.indexes} | {constraint.name for constraint in meta.constraints}
    with connection.cursor() as cursor:
        present = set(connection.introspection.get_constraints(cursor, meta.db_table))
    assert declared and declared <= present, declared - present
