"""A worker's labels index holds their pairs: the Pairs page's worker and guesser filters read the
pair ids from the index alone. It replaces the foreign key's own index on the worker, which it
serves too (created first, so the column is never without one)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0035_premise_claim_order_moved"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="validationlabel",
            index=models.Index(fields=["worker"], include=("pair",), name="label_worker_pairs"),
        ),
        migrations.AlterField(
            model_name="validationlabel",
            name="worker",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="labels",
                to="corpus.worker",
            ),
        ),
    ]
