"""The pair tally keys the validation queue's flags (`needs_validation`, `stopped_early`), so the
cost page's pool and the adjudication page's settled pairs are sums of it.

The tally is rebuilt from the pairs here, in one statement: rows kept before this migration have
both flags false in their key, which would count every queued or stopped pair as neither.
"""

from django.db import migrations, models

KEY = (
    "dataset_id",
    "split",
    "genre_id",
    "author_label",
    "label_count",
    "entailment_votes",
    "neutral_votes",
    "contradiction_votes",
    "imported_gold",
    "needs_validation",
    "stopped_early",
)


def rebuild_pair_tally(apps, schema_editor):
    columns = ", ".join(KEY)
    # The split and genre are the premise's (corpus.tallies.pair_rows).
    grouped = ", ".join(f"p.{name}" if name not in ("split", "genre_id") else f"r.{name}" for name in KEY)
    schema_editor.execute("DELETE FROM corpus_pairtally")
    schema_editor.execute(
        f"INSERT INTO corpus_pairtally ({columns}, n) SELECT {grouped}, count(*) "
        "FROM collection_pair p JOIN collection_premise r ON r.id = p.premise_id "
        f"GROUP BY {grouped}"
    )


class Migration(migrations.Migration):
    dependencies = [("corpus", "0030_pair_unwritten_index")]

    operations = [
        migrations.AddField(
            model_name="pairtally",
            name="needs_validation",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="pairtally",
            name="stopped_early",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(rebuild_pair_tally, migrations.RunPython.noop),
    ]
