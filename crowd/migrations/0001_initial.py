"""Studies and study sessions, moved here from `collection` with their tables unchanged (state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("corpus", "0001_initial"),
        ("collection", "0005_pair_without_writing_claim"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Study",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("slug", models.SlugField(unique=True)),
                        ("name", models.CharField(max_length=100)),
                        (
                            "task_kind",
                            models.CharField(
                                choices=[("writing", "hypothesis writing"), ("validation", "validation")],
                                default="writing",
                                max_length=12,
                            ),
                        ),
                        (
                            "tasks_per_batch",
                            models.PositiveSmallIntegerField(
                                default=1, help_text="Tasks a worker does before the code."
                            ),
                        ),
                        ("completion_code", models.CharField(max_length=64)),
                        (
                            "completion_url",
                            models.URLField(
                                blank=True, help_text="Optional: where the code is sent back (e.g. Prolific)."
                            ),
                        ),
                        ("is_active", models.BooleanField(default=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "dataset",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="studies", to="corpus.dataset"
                            ),
                        ),
                    ],
                    options={
                        "verbose_name_plural": "studies",
                        "db_table": "collection_study",
                        "ordering": ["slug"],
                    },
                ),
                migrations.CreateModel(
                    name="StudySession",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "external_study_id",
                            models.CharField(blank=True, help_text="STUDY_ID or hitId.", max_length=128),
                        ),
                        (
                            "external_session_id",
                            models.CharField(blank=True, help_text="SESSION_ID or assignmentId.", max_length=128),
                        ),
                        ("tasks_done", models.PositiveIntegerField(default=0)),
                        ("started_at", models.DateTimeField(auto_now_add=True)),
                        ("completed_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "study",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="sessions", to="crowd.study"
                            ),
                        ),
                        (
                            "worker",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="study_sessions",
                                to="corpus.worker",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "collection_studysession",
                        "ordering": ["-started_at"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("study", "worker", "external_session_id"), name="unique_study_session"
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
