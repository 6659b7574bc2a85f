# The validation batches and catch trials each study session was served: a claim in a
# study with catch trials sums these instead of counting the study's claims. Filled from the claims
# of the sessions of studies that keep a catch share, as the claims would have counted them.

import django.db.models.deletion
from django.db import migrations, models

FILL = """
INSERT INTO validation_sessionserved (study_session_id, batches, catch_trials)
SELECT claim.study_session_id, count(DISTINCT claim.batch), count(*) FILTER (WHERE claim.is_catch_trial)
FROM validation_validationclaim claim
JOIN collection_studysession session ON session.id = claim.study_session_id
JOIN collection_study study ON study.id = session.study_id
WHERE study.catch_trial_share > 0
GROUP BY claim.study_session_id
"""


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0026_study_hold_rules"),
        ("validation", "0012_cost_tallies"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionServed",
            fields=[
                (
                    "study_session",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="validation_served",
                        serialize=False,
                        to="crowd.studysession",
                    ),
                ),
                ("batches", models.PositiveIntegerField(default=0)),
                ("catch_trials", models.PositiveIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
    ]
