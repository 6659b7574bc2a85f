"""Corpus imports point at the core's Dataset (state only: the table is unchanged)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    replaces = [("corpora", "0002_dataset_in_corpus")]
    dependencies = [
        ("corpus", "0001_initial"),
        ("importers", "0001_corpus_imports"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="corpusimport",
                    name="dataset",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="corpus_imports", to="corpus.dataset"
                    ),
                ),
            ],
        ),
    ]
