"""The pair tally keys imported gold, so reports read imported corpora from the tallies too.

The tally is rebuilt from the pairs here: rows kept before this migration have no imported gold
in their key, and a key that says '' for an imported pair would count its gold as none.
"""

from django.db import migrations, models
from django.db.models import Count


def rebuild_pair_tally(apps, schema_editor):
    pair_model = apps.get_model("corpus", "Pair")
    tally_model = apps.get_model("corpus", "PairTally")
    tally_model.objects.all().delete()
    groups = (
        pair_model.objects.order_by()
        .values_list(
            "dataset_id",
            "premise__split",
            "premise__genre_id",
            "author_label",
            "label_count",
            "entailment_votes",
            "neutral_votes",
            "contradiction_votes",
            "imported_gold",
        )
        .annotate(n=Count("pk"))
    )
    tally_model.objects.bulk_create(
        tally_model(
            dataset_id=dataset,
            split=split,
            genre_id=genre,
            author_label=author,
            label_count=count,
            entailment_votes=e,
            neutral_votes=nu,
            contradiction_votes=c,
            imported_gold=imported,
            n=n,
        )
        for dataset, split, genre, author, count, e, nu, c, imported, n in groups
    )


class Migration(migrations.Migration):
    dependencies = [("corpus", "0022_plural_names")]

    operations = [
        migrations.AddField(
            model_name="pairtally",
            name="imported_gold",
            field=models.CharField(blank=True, default="", max_length=20),
        ),
        migrations.RunPython(rebuild_pair_tally, migrations.RunPython.noop),
    ]
