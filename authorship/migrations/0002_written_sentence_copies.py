"""WrittenSentence: every written hypothesis by its normalised text, looked up at submit for copies
across writers, sessions and studies (authorship.copies).

On PostgreSQL a trigram GIN index on the normalised text answers near-copies (pg_trgm, created by
corpus 0007 for pair search; created here too if missing); SQLite keeps the ordinary index only
(exact copies). The hypotheses already written with a typing record are filled in, without
looking for copies among them (the index starts from what is there).
"""

import django.db.models.deletion
from django.db import migrations, models

from authorship.judgements import normalised_sentence

TRIGRAM_INDEX = "written_sentence_normalised_trgm"
FILL_BATCH = 2000
MAX_KEY_CHARS = 300  # authorship.copies.MAX_KEY_CHARS when this was written


def create_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {TRIGRAM_INDEX} ON authorship_writtensentence USING gin (normalised gin_trgm_ops)"
    )


def drop_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {TRIGRAM_INDEX}")


def fill_from_written_pairs(apps, schema_editor):
    writing_evidence = apps.get_model("authorship", "WritingEvidence")
    written_sentence = apps.get_model("authorship", "WrittenSentence")
    rows = (
        writing_evidence.objects.filter(pair__isnull=False)
        .order_by("pk")
        .values_list("pair_id", "pair__premise_id", "worker_id", "study_session_id", "pair__hypothesis")
    )
    batch = []
    for pair_id, premise_id, worker_id, session_id, hypothesis in rows.iterator(chunk_size=FILL_BATCH):
        batch.append(
            written_sentence(
                pair_id=pair_id,
                premise_id=premise_id,
                worker_id=worker_id,
                study_session_id=session_id,
                normalised=normalised_sentence(hypothesis)[:MAX_KEY_CHARS],
            )
        )
        if len(batch) >= FILL_BATCH:
            written_sentence.objects.bulk_create(batch)
            batch = []
    written_sentence.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0001_writing_evidence"),
        ("corpus", "0024_premise_held"),
        ("crowd", "0019_code_hold_decision"),
    ]

    operations = [
        migrations.CreateModel(
            name="WrittenSentence",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "normalised",
                    models.CharField(help_text="Case-folded words, one space apart (at most 300).", max_length=300),
                ),
                ("copy_similarity", models.FloatField(blank=True, null=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "cluster_root",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="authorship.writtensentence",
                    ),
                ),
                (
                    "copy_of",
                    models.ForeignKey(
                        blank=True,
                        help_text="The earlier sentence.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="authorship.writtensentence",
                    ),
                ),
                (
                    "pair",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="written_sentence", to="corpus.pair"
                    ),
                ),
                (
                    "premise",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="corpus.premise"
                    ),
                ),
                (
                    "study_session",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="crowd.studysession",
                    ),
                ),
                (
                    "worker",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="written_sentences",
                        to="corpus.worker",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["normalised"], name="written_sentence_normalised")],
            },
        ),
        migrations.RunPython(create_trigram_index, drop_trigram_index),
        migrations.RunPython(fill_from_written_pairs, migrations.RunPython.noop),
    ]
