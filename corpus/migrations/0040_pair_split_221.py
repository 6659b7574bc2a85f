# The pairs split 2-2-1, in an index of their own for the pair browser's pattern. Built concurrently
# on PostgreSQL: every label rewrites its pair, so a plain CREATE INDEX would hold the validators
# for the whole build at corpus scale.

import importlib

from django.db import migrations, models

AddIndexConcurrentlyOnPostgres = importlib.import_module(
    "corpus.migrations.0027_word_tally_newer_index"
).AddIndexConcurrentlyOnPostgres


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("corpus", "0039_pair_search_pending_lists"),
    ]

    operations = [
        AddIndexConcurrentlyOnPostgres(
            model_name="pair",
            index=models.Index(
                condition=models.Q(
                    ("label_count", 5),
                    models.Q(
                        models.Q(("contradiction_votes", 2), ("entailment_votes", 1), ("neutral_votes", 2)),
                        models.Q(("contradiction_votes", 2), ("entailment_votes", 2), ("neutral_votes", 1)),
                        models.Q(("contradiction_votes", 1), ("entailment_votes", 2), ("neutral_votes", 2)),
                        _connector="OR",
                    ),
                ),
                fields=["id"],
                name="pair_split_221",
            ),
        ),
    ]
