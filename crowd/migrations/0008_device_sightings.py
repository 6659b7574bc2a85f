import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("corpus", "0001_initial"), ("crowd", "0007_hold_code_at_chance")]

    operations = [
        migrations.CreateModel(
            name="DeviceSighting",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("device", models.CharField(max_length=64)),
                ("first_seen", models.DateTimeField(auto_now_add=True)),
                (
                    "worker",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="device_sightings",
                        to="corpus.worker",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["device"], name="device_sighting_device")],
                "constraints": [
                    models.UniqueConstraint(fields=("device", "worker"), name="one_sighting_per_device_worker")
                ],
            },
        ),
    ]
