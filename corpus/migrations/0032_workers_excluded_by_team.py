"""Exclusions become a team's: a worker excluded before this migration was excluded in
every team's data, so they are excluded in every team now, and each of their labels is marked
excluded (`ValidationLabel.excluded`, the gold rule's column). Reversed, a worker excluded in any
team is excluded everywhere again."""

import django.db.models.deletion
from django.db import migrations, models


def exclusions_from_the_flag(apps, schema_editor):
    Worker = apps.get_model("corpus", "Worker")
    WorkerExclusion = apps.get_model("corpus", "WorkerExclusion")
    ValidationLabel = apps.get_model("corpus", "ValidationLabel")
    Team = apps.get_model("teams", "Team")
    excluded = list(Worker.objects.filter(is_excluded=True).values_list("pk", flat=True))
    teams = list(Team.objects.values_list("pk", flat=True))
    WorkerExclusion.objects.bulk_create(
        WorkerExclusion(worker_id=worker, team_id=team) for worker in excluded for team in teams
    )
    ValidationLabel.objects.filter(worker_id__in=excluded).update(excluded=True)


def the_flag_from_exclusions(apps, schema_editor):
    Worker = apps.get_model("corpus", "Worker")
    WorkerExclusion = apps.get_model("corpus", "WorkerExclusion")
    Worker.objects.filter(pk__in=WorkerExclusion.objects.values("worker_id")).update(is_excluded=True)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0031_pair_tally_validation_flags"),
        ("teams", "0002_default_team"),
    ]

    operations = [
        migrations.AddField(
            model_name="validationlabel",
            name="excluded",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="Its worker is excluded in this dataset's team: it counts nowhere.",
            ),
        ),
        migrations.CreateModel(
            name="WorkerExclusion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="worker_exclusions", to="teams.team"
                    ),
                ),
                (
                    "worker",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="exclusions", to="corpus.worker"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["team", "worker"], name="exclusion_team_worker")],
                "constraints": [
                    models.UniqueConstraint(fields=("worker", "team"), name="one_exclusion_per_worker_team")
                ],
            },
        ),
        migrations.RunPython(exclusions_from_the_flag, the_flag_from_exclusions),
    ]
