"""Datasets, genres, prompt families, premises, workers and pairs moved to `corpus`; studies and
study sessions to `crowd`. State only (the tables keep their names), plus the content types,
so that admin history and permissions follow the models to their new apps.
"""

import django.db.models.deletion
from django.db import migrations, models

MOVED = {
    ("collection", "dataset"): "corpus",
    ("collection", "genre"): "corpus",
    ("collection", "promptfamily"): "corpus",
    ("collection", "promptexample"): "corpus",
    ("collection", "faqentry"): "corpus",
    ("collection", "premise"): "corpus",
    ("collection", "worker"): "corpus",
    ("collection", "pair"): "corpus",
    ("validation", "validationlabel"): "corpus",
    ("collection", "study"): "crowd",
    ("collection", "studysession"): "crowd",
}


def move_content_types(apps, schema_editor, reverse=False):
    ContentType = apps.get_model("contenttypes", "ContentType")
    for (old_app, model), new_app in MOVED.items():
        source, target = (new_app, old_app) if reverse else (old_app, new_app)
        # A fresh database has no content types yet (they are made after migrating): nothing to move.
        if not ContentType.objects.filter(app_label=target, model=model).exists():
            ContentType.objects.filter(app_label=source, model=model).update(app_label=target)


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, reverse=True)


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("collection", "0005_pair_without_writing_claim"),
        ("corpus", "0001_initial"),
        ("crowd", "0001_initial"),
        ("validation", "0003_labels_moved_to_corpus"),
        ("importers", "0002_dataset_in_corpus"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name="study",
                    name="dataset",
                ),
                migrations.RemoveField(
                    model_name="premise",
                    name="dataset",
                ),
                migrations.RemoveField(
                    model_name="pair",
                    name="dataset",
                ),
                migrations.AlterField(
                    model_name="premiseimport",
                    name="dataset",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="premise_imports", to="corpus.dataset"
                    ),
                ),
                migrations.RemoveField(
                    model_name="faqentry",
                    name="family",
                ),
                migrations.RemoveField(
                    model_name="genre",
                    name="family",
                ),
                migrations.AlterField(
                    model_name="premiseimport",
                    name="genre",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="premise_imports", to="corpus.genre"
                    ),
                ),
                migrations.RemoveField(
                    model_name="premise",
                    name="genre",
                ),
                migrations.RemoveField(
                    model_name="pair",
                    name="author",
                ),
                migrations.RemoveField(
                    model_name="pair",
                    name="premise",
                ),
                migrations.AlterField(
                    model_name="premisereport",
                    name="premise",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="reports", to="corpus.premise"
                    ),
                ),
                migrations.AlterField(
                    model_name="writingclaim",
                    name="premise",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="writing_claims", to="corpus.premise"
                    ),
                ),
                migrations.RemoveField(
                    model_name="promptexample",
                    name="family",
                ),
                migrations.RemoveField(
                    model_name="studysession",
                    name="study",
                ),
                migrations.RemoveField(
                    model_name="studysession",
                    name="worker",
                ),
                migrations.AlterField(
                    model_name="writingclaim",
                    name="study_session",
                    field=models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to="crowd.studysession"
                    ),
                ),
                migrations.RemoveField(
                    model_name="worker",
                    name="user",
                ),
                migrations.AlterField(
                    model_name="premisereport",
                    name="worker",
                    field=models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="reports",
                        to="corpus.worker",
                    ),
                ),
                migrations.AlterField(
                    model_name="writingclaim",
                    name="worker",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="writing_claims", to="corpus.worker"
                    ),
                ),
                migrations.DeleteModel(
                    name="Dataset",
                ),
                migrations.DeleteModel(
                    name="FaqEntry",
                ),
                migrations.DeleteModel(
                    name="Genre",
                ),
                migrations.DeleteModel(
                    name="Pair",
                ),
                migrations.DeleteModel(
                    name="Premise",
                ),
                migrations.DeleteModel(
                    name="PromptExample",
                ),
                migrations.DeleteModel(
                    name="PromptFamily",
                ),
                migrations.DeleteModel(
                    name="Study",
                ),
                migrations.DeleteModel(
                    name="StudySession",
                ),
                migrations.DeleteModel(
                    name="Worker",
                ),
            ],
        ),
        migrations.RunPython(move_content_types, move_content_types_back),
    ]
