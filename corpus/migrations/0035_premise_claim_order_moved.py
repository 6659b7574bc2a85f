"""The premise's claims made and its claim-order index leave the premise table: the writing claim's
order lives in `collection_premise_claim_order` (collection migration 0017, which copied them)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0034_pair_gold_ne_author"),
        ("collection", "0017_premise_claim_order_table"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="premise", name="premise_claim_order"),
        migrations.RemoveField(model_name="premise", name="claims_made"),
    ]
