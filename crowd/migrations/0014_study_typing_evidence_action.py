from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0013_study_session_closed_by_market"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="typing_evidence_action",
            field=models.CharField(
                choices=[
                    ("record", "only record the evidence"),
                    ("warn", "warn the participant at once (please type your own sentences)"),
                    ("refuse", "refuse pasted or script-set text in the field"),
                    ("hold", "hold the completion code of a session with flagged sentences"),
                ],
                default="record",
                help_text="Writing tasks: what the study does with how each sentence was typed (docs/quality.md, "
                "'How hypotheses were written'). Participants are told that typing is measured, never its content.",
                max_length=8,
            ),
        ),
    ]
