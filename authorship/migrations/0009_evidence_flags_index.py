# The typing records' flags indexed for the Pairs page's typing and repeated filters. Built
# concurrently: a record is written with every hypothesis, so the table is as large as the written
# corpus and the writing submit appends to it all the time (a plain CREATE INDEX would hold it).

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("authorship", "0008_sentence_tally"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="writingevidence",
            index=GinIndex(fields=["flags"], name="evidence_flags", opclasses=["jsonb_path_ops"]),
        ),
    ]
