# The open validation claims indexed by study session (the study page's live claims). Built
# concurrently on PostgreSQL, as 0009's index was: validators claim all the time.

import importlib

from django.db import migrations, models

AddIndex = importlib.import_module("validation.migrations.0009_open_claims_by_pair").AddIndex


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("validation", "0014_lone_key_indexes_dropped"),
    ]

    operations = [
        AddIndex(
            model_name="validationclaim",
            index=models.Index(
                condition=models.Q(("status", "open")),
                fields=["study_session", "expires_at"],
                name="valclaim_session_open",
            ),
        ),
    ]
