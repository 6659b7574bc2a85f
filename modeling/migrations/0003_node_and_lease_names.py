"""Names that say one thing: a GPU machine is a *node*, its hold on a run a *lease*.

State only: WorkerToken is NodeToken on its old table (modeling_workertoken), and TrainingRun's
claim_id, worker_token and worker_hostname are lease_id, node_token and node_hostname on their old
columns. The database is untouched, except that the token's content type follows the model (so
admin history and permissions on tokens stay attached), as importers/0003 did for its app.
"""

import django.db.models.deletion
from django.db import migrations, models

OLD, NEW = "workertoken", "nodetoken"


def rename_content_type(apps, schema_editor, source=OLD, target=NEW):
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    content_type = ContentType.objects.filter(app_label="modeling", model=source).first()
    # A fresh database has none yet (they are made after migrating); never make a duplicate.
    if content_type is None or ContentType.objects.filter(app_label="modeling", model=target).exists():
        return
    content_type.model = target
    content_type.save(update_fields=["model"])
    for permission in Permission.objects.filter(content_type=content_type, codename__endswith=f"_{source}"):
        permission.codename = permission.codename[: -len(source)] + target
        permission.name = permission.name.replace("worker token", "node token")
        permission.save(update_fields=["codename", "name"])


def rename_back(apps, schema_editor):
    rename_content_type(apps, schema_editor, source=NEW, target=OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("modeling", "0002_worker_tokens_and_checkpoints"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterModelTable(name="workertoken", table="modeling_workertoken"),
                migrations.RenameModel(old_name="WorkerToken", new_name="NodeToken"),
                migrations.RenameField(model_name="trainingrun", old_name="claim_id", new_name="lease_id"),
                migrations.AlterField(
                    model_name="trainingrun",
                    name="lease_id",
                    field=models.CharField(blank=True, db_column="claim_id", max_length=64),
                ),
                migrations.RenameField(model_name="trainingrun", old_name="worker_token", new_name="node_token"),
                migrations.AlterField(
                    model_name="trainingrun",
                    name="node_token",
                    field=models.ForeignKey(
                        blank=True,
                        db_column="worker_token_id",
                        help_text="The GPU node's token that holds the run (nodes that report over HTTP).",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="runs",
                        to="modeling.nodetoken",
                    ),
                ),
                migrations.RenameField(model_name="trainingrun", old_name="worker_hostname", new_name="node_hostname"),
                migrations.AlterField(
                    model_name="trainingrun",
                    name="node_hostname",
                    field=models.CharField(blank=True, db_column="worker_hostname", max_length=200),
                ),
            ],
            database_operations=[migrations.RunPython(rename_content_type, rename_back)],
        ),
    ]
