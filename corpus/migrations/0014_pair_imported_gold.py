from django.db import migrations, models
from django.db.models import F


def imported_single_labels_are_gold(apps, schema_editor):
    """Pairs already imported with one label and no validation queued (DNC's recasts, SNLI/MultiNLI
    train pairs): their label was the file's gold, kept '-' until now."""
    Pair = apps.get_model("corpus", "Pair")
    pairs = Pair.objects.filter(
        dataset__is_imported=True, label_count=1, needs_validation=False, adjudicated_label="", gold_label="-"
    )
    pairs.update(imported_gold=F("author_label"), gold_label=F("author_label"))


class Migration(migrations.Migration):
    dependencies = [("corpus", "0013_pair_written_at")]

    operations = [
        migrations.AddField(
            model_name="pair",
            name="imported_gold",
            field=models.CharField(
                blank=True,
                choices=[("entailment", "entailment"), ("neutral", "neutral"), ("contradiction", "contradiction")],
                db_default="",
                default="",
                help_text="The source file's gold.",
                max_length=20,
            ),
        ),
        migrations.RunPython(imported_single_labels_are_gold, migrations.RunPython.noop),
    ]
