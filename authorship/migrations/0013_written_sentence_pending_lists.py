# The written sentences' GIN indexes keep a short pending list: the copy check at every writing
# submit reads it whole, and PostgreSQL's 4 MB default held thousands of sentences between merges
# (bench/gin_pending.py). The storage parameter is set in place (no rebuild) and the list merged now.

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

INDEXES = ("written_sentence_normalised_trgm", "written_sentence_own_words")


class Migration(migrations.Migration):
    dependencies = [
        ("authorship", "0012_flag_filter_indexes"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveIndex(model_name="writtensentence", name="written_sentence_own_words"),
                migrations.AddIndex(
                    model_name="writtensentence",
                    index=GinIndex(fields=["own_words"], gin_pending_list_limit=64, name="written_sentence_own_words"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    (
                        *(f"ALTER INDEX {name} SET (gin_pending_list_limit = 64)" for name in INDEXES),
                        *(f"SELECT gin_clean_pending_list('{name}')" for name in INDEXES),
                    ),
                    tuple(f"ALTER INDEX {name} RESET (gin_pending_list_limit)" for name in INDEXES),
                ),
            ],
        ),
    ]
