"""Premises imported before their pairs counted as written: raise `writings_done` to the complete
writings among their pairs (a hypothesis of each label), as `corpus.writings.count_writings_of_pairs`
does for every import since. Without it the writing task serves an imported premise whose writing
is complete, and a worker's submit there took the pairIDs the corpus already had (HTTP 500)."""

from django.db import migrations
from django.db.models import Count, F, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce, Least

LABELS = ("entailment", "neutral", "contradiction")


def count_imported_writings(apps, schema_editor):
    Premise = apps.get_model("corpus", "Premise")
    Pair = apps.get_model("corpus", "Pair")

    def written(label):
        of_label = Pair.objects.filter(premise=OuterRef("pk"), author_label=label).order_by()
        counted = of_label.values("premise").annotate(n=Count("pk")).values("n")
        return Coalesce(Subquery(counted, output_field=IntegerField()), 0)

    complete = Least(*(written(label) for label in LABELS))
    # Never lowers it: an adversarial writing is one pair, and a platform writing three.
    Premise.objects.alias(complete=complete).filter(writings_done__lt=F("complete")).update(writings_done=complete)


class Migration(migrations.Migration):
    dependencies = [
        ("importers", "0004_long_task_heartbeat"),
        ("corpus", "0022_plural_names"),
    ]

    operations = [migrations.RunPython(count_imported_writings, migrations.RunPython.noop)]
