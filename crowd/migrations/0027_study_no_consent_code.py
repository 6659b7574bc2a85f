from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0026_study_hold_rules"),
    ]

    operations = [
        migrations.AddField(
            model_name="study",
            name="no_consent_code",
            field=models.CharField(
                blank=True,
                help_text="Optional: the code a participant who does not consent enters on the market "
                '(Prolific\'s "no consent" code); blank: they are asked to return the study (MTurk: the HIT).',
                max_length=64,
            ),
        ),
    ]
