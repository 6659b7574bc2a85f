"""The writing claim's order within one genre of a dataset (`collection.writing_claims.candidate_statement`).

A balanced study asks each genre of its pool in turn. Through `premise_claim_order` alone, a genre
with nothing left was learnt by walking every premise of the dataset (the genre is not in that
index). Led by dataset and genre, and read only below the dataset's writings per premise, this
index answers such a genre with an empty range.

The premise table is the corpus app's (`corpus.models.Premise`); the index is the writing claim's,
so it lives with the claim's migrations. Built concurrently: writers go on while it builds.
"""

from django.db import migrations

INDEX = "premise_genre_claim_order"


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("collection", "0014_premise_import_split_and_report"),
        ("corpus", "0008_premise_claim_order"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {INDEX} ON collection_premise"
            " (dataset_id, genre_id, writings_done, claims_made, id)"
            " WHERE status = 'available' AND NOT (split = '')",
            f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX}",
        ),
    ]
