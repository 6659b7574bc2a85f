"""A pair's labels that count are read with their words from one index (the export's lines, a pair at
a time, without the label table's pages). The foreign key's own index on the pair goes: the unique
(pair, position) index serves a pair's lookups (the new index is created first)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0036_label_worker_pairs"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="validationlabel",
            index=models.Index(
                condition=models.Q(("awaiting_market_session__isnull", True), ("excluded", False)),
                fields=["pair", "position"],
                include=("label", "ordinal"),
                name="counted_label_words",
            ),
        ),
        migrations.AlterField(
            model_name="validationlabel",
            name="pair",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="labels",
                to="corpus.pair",
            ),
        ),
    ]
