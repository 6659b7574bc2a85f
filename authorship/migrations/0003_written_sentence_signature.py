"""WrittenSentence.signature and own_words: what of a hypothesis survives a paraphrase, looked up
at submit beside the trigram rule (authorship.paraphrase, authorship.copies). The sentences already
written are filled in from their pair's hypothesis and premise."""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
from django.db import migrations, models

from authorship.paraphrase import stored_signature

FILL_BATCH = 2000


def fill_signatures(apps, schema_editor):
    written_sentence = apps.get_model("authorship", "WrittenSentence")
    rows = written_sentence.objects.order_by("pk").values_list("pk", "pair__hypothesis", "premise__text")
    batch = []
    for pk, hypothesis, premise in rows.iterator(chunk_size=FILL_BATCH):
        text, own = stored_signature(hypothesis, premise)
        batch.append(written_sentence(pk=pk, signature=text, own_words=own))
        if len(batch) >= FILL_BATCH:
            written_sentence.objects.bulk_update(batch, ["signature", "own_words"])
            batch = []
    written_sentence.objects.bulk_update(batch, ["signature", "own_words"])


class Migration(migrations.Migration):
    dependencies = [("authorship", "0002_written_sentence_copies")]

    operations = [
        migrations.AddField(
            model_name="writtensentence",
            name="signature",
            field=models.CharField(blank=True, default="", help_text="Lemmas; premise words as _.", max_length=300),
        ),
        migrations.AddField(
            model_name="writtensentence",
            name="own_words",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=40), blank=True, default=list, size=None
            ),
        ),
        migrations.AddIndex(
            model_name="writtensentence",
            index=django.contrib.postgres.indexes.GinIndex(fields=["own_words"], name="written_sentence_own_words"),
        ),
        migrations.RunPython(fill_signatures, migrations.RunPython.noop),
    ]
