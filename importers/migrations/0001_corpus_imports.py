"""Corpus imports. This app was first labelled `corpora`; it was renamed `importers` (what it does)
and its migrations replace the `corpora` ones, so a database migrated under the old label counts
them as applied and keeps its table (`corpora_corpusimport`)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    replaces = [("corpora", "0001_corpus_imports")]

    dependencies = [
        ("collection", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="CorpusImport",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("source", models.CharField(help_text="The imported file's name.", max_length=255)),
                (
                    "split",
                    models.CharField(choices=[("train", "train"), ("dev", "dev"), ("test", "test")], max_length=5),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[("running", "running"), ("done", "done"), ("failed", "failed")],
                        default="running",
                        max_length=10,
                    ),
                ),
                ("bytes_total", models.PositiveBigIntegerField(default=0)),
                ("bytes_read", models.PositiveBigIntegerField(default=0)),
                ("lines_read", models.PositiveIntegerField(default=0)),
                ("pairs_created", models.PositiveIntegerField(default=0)),
                ("premises_created", models.PositiveIntegerField(default=0)),
                ("labels_created", models.PositiveIntegerField(default=0)),
                ("already_present", models.PositiveIntegerField(default=0)),
                ("labels_skipped", models.PositiveIntegerField(default=0)),
                ("malformed_count", models.PositiveIntegerField(default=0)),
                (
                    "problems",
                    models.JSONField(blank=True, default=list, help_text="The first malformed lines: [line, reason]."),
                ),
                ("error", models.TextField(blank=True, help_text="Why the import stopped, if it failed.")),
                ("started_at", models.DateTimeField(auto_now_add=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "dataset",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="corpus_imports",
                        to="collection.dataset",
                    ),
                ),
            ],
            options={
                "ordering": ["-started_at", "-id"],
                "db_table": "corpora_corpusimport",
            },
        ),
    ]
