from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("crowd", "0006_mpe_task_kind")]

    operations = [
        migrations.AddField(
            model_name="study",
            name="hold_code_at_chance",
            field=models.BooleanField(
                default=False,
                help_text="Hold the completion code of a session whose labels are at chance so far (the sequential "
                "guesser test over all of the worker's labels): the participant sees a neutral message, researchers "
                "see why.",
            ),
        ),
        migrations.AddField(
            model_name="studysession",
            name="code_held_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
    ]
