"""Pairs no longer point at their writing claim: the claim's pairs are its premise's pairs by
its worker (a worker never gets the same premise twice), and the column was the one arrow from
the pairs up to the writing task. Dropping it loses nothing that cannot be derived.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("collection", "0004_premise_import_progress"),
    ]

    operations = [
        migrations.RemoveField(model_name="pair", name="writing_claim"),
    ]
