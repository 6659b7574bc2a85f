import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0031_study_shape_check"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="CodeHold",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(max_length=40)),
                ("text", models.CharField(max_length=300)),
                ("found_at", models.DateTimeField(auto_now_add=True)),
                (
                    "decision",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("released", "released: the code is given and its money is payable"),
                            ("refused", "refused: no code, and nothing of it is paid"),
                        ],
                        max_length=10,
                    ),
                ),
                ("decided_at", models.DateTimeField(blank=True, null=True)),
                (
                    "decided_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "session",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="code_holds", to="crowd.studysession"
                    ),
                ),
            ],
            options={
                "ordering": ["found_at", "pk"],
                "indexes": [
                    models.Index(
                        condition=models.Q(("decision", "released"), _negated=True),
                        fields=["session"],
                        name="code_hold_withheld",
                    )
                ],
                "constraints": [models.UniqueConstraint(fields=("session", "kind", "text"), name="code_hold_once")],
            },
        ),
    ]
