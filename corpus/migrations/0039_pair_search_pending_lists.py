# The pair search table's trigram indexes keep a short pending list: every writing submit adds its
# pairs' rows, and every text search of the Pairs page and the admin read the list whole (PostgreSQL's
# 4 MB default held thousands of rows between merges; bench/gin_pending.py). Set in place, merged now.

from django.db import migrations

INDEXES = ("pair_search_hypothesis_trgm", "pair_search_pair_id_trgm")


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0038_pair_counted_labels"),
    ]

    operations = [
        migrations.RunSQL(
            (
                *(f"ALTER INDEX {name} SET (gin_pending_list_limit = 64)" for name in INDEXES),
                *(f"SELECT gin_clean_pending_list('{name}')" for name in INDEXES),
            ),
            tuple(f"ALTER INDEX {name} RESET (gin_pending_list_limit)" for name in INDEXES),
        ),
    ]
