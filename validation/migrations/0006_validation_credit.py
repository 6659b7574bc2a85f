"""The cost page's credit of each validated pair (validation.credits), set for the claims there are."""

from django.db import migrations, models
from django.db.models import Exists, OuterRef, Subquery


def credit_latest(apps, schema_editor):
    """validation.credits.rebuild, on the historical models: flag each pair's latest submitted,
    ordinary claim in a study session."""
    claim = apps.get_model("validation", "ValidationClaim")
    pair = apps.get_model("corpus", "Pair")
    claims = claim.objects.filter(
        status="submitted", is_catch_trial=False, study_session__isnull=False, pair=OuterRef("pk")
    )
    latest = (
        pair.objects.filter(Exists(claims))
        .annotate(latest=Subquery(claims.order_by("-submitted_at", "-id").values("id")[:1]))
        .values("latest")
    )
    claim.objects.filter(pk__in=latest).update(credited=True)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0017_word_tally"),
        ("crowd", "0011_premise_task_kind"),
        ("validation", "0005_premise_labels_grammaticality_claims"),
    ]

    operations = [
        migrations.AddField(
            model_name="validationclaim",
            name="credited",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.AddIndex(
            model_name="validationclaim",
            index=models.Index(condition=models.Q(("credited", True)), fields=["pair"], name="valclaim_credited"),
        ),
        migrations.RunPython(credit_latest, migrations.RunPython.noop),
    ]
